// @vitest-environment node
import { describe, expect, it } from "vitest";
import { findOperationErrors } from "./check-operations.mjs";

const schema = `
  type Query { health: Health! project(id: ID!): Project }
  type Health { ok: Boolean! version: String! }
  type Project { id: ID! name: String! }
`;

const check = (...bodies) => findOperationErrors(schema, bodies.map((body, i) => ({ name: `op${i}.graphql`, body })));

describe("findOperationErrors", () => {
  it("accepts operations that fit the schema, with fragments shared across files", () => {
    expect(
      check("query Health { health { ok version } }", "query Project($id: ID!) { project(id: $id) { ...P } }", "fragment P on Project { id name }"),
    ).toEqual([]);
  });

  it("names the file and line of a field the schema does not have", () => {
    expect(check("query Health {\n  health { ok uptime }\n}")).toEqual([
      'op0.graphql:2:15: Cannot query field "uptime" on type "Health".',
    ]);
  });

  it("rejects wrong argument types, unnamed and duplicate operations, syntax errors", () => {
    expect(check("query P($id: String!) { project(id: $id) { id } }").join()).toMatch(/Variable "\$id" of type "String!"/);
    expect(check("{ health { ok } }").join()).toMatch(/needs a name/);
    expect(check("query A { health { ok } }", "query A { health { version } }").join()).toMatch(/only one operation named "A"/);
    expect(check("query A { health { ok }").join()).toMatch(/^op0.graphql:1:\d+: Syntax Error/);
  });
});
