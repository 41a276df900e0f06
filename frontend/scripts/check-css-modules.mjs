// Drift check for the styles: every `styles.x` a component reads must be a class of the CSS module
// it imported (a typo would otherwise be an `undefined` class and a silently unstyled element),
// every class a module defines must be read somewhere (no dead CSS), and a className written as a
// string must name one of the few global classes in src/styles/global.css. TypeScript cannot see
// any of this: vite/client types a module as `{ [key: string]: string }`.
//
//   node scripts/check-css-modules.mjs [src dir]

import { readFileSync, readdirSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL(".", import.meta.url));
const DEFAULT_SRC = resolve(here, "../src");
const GLOBAL_SHEET = "styles/global.css";

/** The class names a stylesheet defines in its selectors (not inside :global(...)). */
export function classesOf(css) {
  const names = new Set();
  const text = css.replace(/\/\*[\s\S]*?\*\//g, "");
  // Selector preludes only: what comes before each "{" since the previous "{", "}" or ";".
  for (const [, prelude] of text.matchAll(/([^{};]*)\{/g)) {
    if (prelude.trim().startsWith("@")) continue;
    const local = prelude.replace(/:global\([^)]*\)/g, "");
    for (const [, name] of local.matchAll(/\.(-?[_a-zA-Z][\w-]*)/g)) names.add(name);
  }
  return names;
}

const lineOf = (body, index) => body.slice(0, index).split("\n").length;

/**
 * @param {{ name: string, body: string }[]} files sources (.ts, .tsx) and stylesheets (.css), named
 *   by their path relative to the src dir
 * @returns {string[]} one message per problem, each starting with "file:line" or "file"
 */
export function findCssModuleProblems(files) {
  const byName = new Map(files.map((file) => [file.name, file.body]));
  const globals = classesOf(byName.get(GLOBAL_SHEET) ?? "");
  const used = new Map(); // module file -> class names read from it
  const problems = [];
  for (const { name, body } of files.filter((file) => /\.tsx?$/.test(file.name))) {
    // Import lines blanked (same length, so line numbers hold): "./x.module.css" is not `x.module`.
    const code = body.replace(/^import .*$/gm, (line) => " ".repeat(line.length));
    for (const imported of body.matchAll(/^import\s+(?:(\w+)\s+from\s+)?"(\.[^"]+\.module\.css)";/gm)) {
      const [, binding, path] = imported;
      const module = join(dirname(name), path);
      const classes = byName.has(module) ? classesOf(byName.get(module)) : null;
      if (!classes) {
        problems.push(`${name}:${lineOf(body, imported.index)}: ${path} does not exist`);
        continue;
      }
      if (!used.has(module)) used.set(module, new Set());
      if (!binding) continue;
      for (const access of code.matchAll(new RegExp(`\\b${binding}(\\.(\\w+)|\\[)`, "g"))) {
        const where = `${name}:${lineOf(body, access.index)}`;
        if (!access[2]) problems.push(`${where}: ${binding}[...] cannot be checked; write ${binding}.name`);
        else if (!classes.has(access[2])) problems.push(`${where}: ${binding}.${access[2]} is not a class of ${path}`);
        else used.get(module).add(access[2]);
      }
    }
    // className="a b", and bare string arguments of cx(): cx(styles.row, "mono").
    const literals = [...code.matchAll(/className="([^"]*)"/g), ...[...code.matchAll(/\bcx\(([^)]*)\)/g)].flatMap((call) =>
      [...call[1].matchAll(/(?:^|,)\s*"([^"]*)"\s*(?=,|$)/g)].map((arg) => Object.assign(arg, { index: call.index })),
    )];
    for (const literal of literals) {
      for (const cls of literal[1].split(/\s+/).filter(Boolean)) {
        if (!globals.has(cls)) problems.push(`${name}:${lineOf(body, literal.index)}: "${cls}" is not a class of ${GLOBAL_SHEET}`);
      }
    }
  }
  for (const { name, body } of files.filter((file) => file.name.endsWith(".module.css"))) {
    if (!used.has(name)) {
      problems.push(`${name}: no component imports it`);
      continue;
    }
    const unread = [...classesOf(body)].filter((cls) => !used.get(name).has(cls));
    if (unread.length > 0) problems.push(`${name}: never used: ${unread.map((cls) => `.${cls}`).join(", ")}`);
  }
  return problems;
}

/** @param {string} dir */
export function readSourceFiles(dir) {
  return readdirSync(dir, { recursive: true })
    .map(String)
    .filter((name) => /\.(tsx?|css)$/.test(name) && !name.startsWith("gql/"))
    .sort()
    .map((name) => ({ name, body: readFileSync(join(dir, name), "utf8") }));
}

function main() {
  const [srcDir = DEFAULT_SRC] = process.argv.slice(2);
  const files = readSourceFiles(srcDir);
  const problems = findCssModuleProblems(files);
  if (problems.length > 0) {
    console.error(`CSS classes in ${relative(process.cwd(), srcDir)} do not match their stylesheets:`);
    for (const problem of problems) console.error(`  ${problem}`);
    process.exit(1);
  }
  const modules = files.filter((file) => file.name.endsWith(".module.css")).length;
  console.log(`${modules} CSS module(s): every class read exists, every class defined is read`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
