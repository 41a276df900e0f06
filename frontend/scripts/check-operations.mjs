// Drift check: every operation in src/graphql/*.graphql must validate against ../schema.graphql.
// Codegen validates too, but this names the file and line, runs in well under a second, and can be
// run by the backend side after `make schema` without generating anything.
//
//   node scripts/check-operations.mjs [schema.graphql] [operations dir]

import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Kind, Source, buildSchema, getLocation, parse, validate } from "graphql";

const here = fileURLToPath(new URL(".", import.meta.url));
const DEFAULT_SCHEMA = resolve(here, "../../schema.graphql");
const DEFAULT_OPERATIONS = resolve(here, "../src/graphql");

/**
 * Validate operation documents against a schema, as one document (so fragments may be shared
 * across files and names must be unique across all of them).
 *
 * @param {string} schemaSdl the schema in SDL
 * @param {{ name: string, body: string }[]} files operation documents
 * @returns {string[]} one message per problem, each starting with "file:line:column"
 */
export function findOperationErrors(schemaSdl, files) {
  const schema = buildSchema(schemaSdl);
  const problems = [];
  const definitions = [];
  for (const file of files) {
    try {
      const doc = parse(new Source(file.body, file.name));
      definitions.push(...doc.definitions);
    } catch (error) {
      problems.push(describe(error));
    }
  }
  if (problems.length > 0) return problems;
  for (const def of definitions) {
    if (def.kind === Kind.OPERATION_DEFINITION && !def.name) {
      const { line, column } = getLocation(def.loc.source, def.loc.start);
      problems.push(`${def.loc.source.name}:${line}:${column}: every operation needs a name (codegen types are named after it)`);
    }
  }
  const errors = validate(schema, { kind: Kind.DOCUMENT, definitions });
  problems.push(...errors.map(describe));
  return problems;
}

/** @param {import("graphql").GraphQLError} error */
function describe(error) {
  const source = error.source ?? error.nodes?.[0]?.loc?.source;
  const where = error.locations?.[0] ?? { line: 1, column: 1 };
  return `${source?.name ?? "?"}:${where.line}:${where.column}: ${error.message}`;
}

/** @param {string} dir */
export function readOperationFiles(dir) {
  return readdirSync(dir, { recursive: true })
    .map(String)
    .filter((name) => name.endsWith(".graphql"))
    .sort()
    .map((name) => ({ name: relative(process.cwd(), join(dir, name)), body: readFileSync(join(dir, name), "utf8") }));
}

function main() {
  const [schemaPath = DEFAULT_SCHEMA, operationsDir = DEFAULT_OPERATIONS] = process.argv.slice(2);
  const files = readOperationFiles(operationsDir);
  if (files.length === 0) {
    console.error(`no .graphql operations under ${operationsDir}`);
    process.exit(1);
  }
  const problems = findOperationErrors(readFileSync(schemaPath, "utf8"), files);
  if (problems.length > 0) {
    console.error(`GraphQL operations do not match ${relative(process.cwd(), schemaPath)}:`);
    for (const problem of problems) console.error(`  ${problem}`);
    process.exit(1);
  }
  console.log(`${files.length} operation file(s) valid against ${relative(process.cwd(), schemaPath)}`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
