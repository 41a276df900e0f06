// @vitest-environment node
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { classesOf, findCssModuleProblems, readSourceFiles } from "./check-css-modules.mjs";

const globalCss = { name: "styles/global.css", body: ":root { --x: 1px; } .muted { color: gray; } .mono { font-family: monospace; }" };
const moduleCss = {
  name: "components/Card.module.css",
  body: `/* .commented { } */
.card { padding: 0.5rem; }
.card:hover .title, .wide { margin: 0; }
@media (max-width: 640px) { .title { font-size: 1.2em; } }
.card :global(.muted) { opacity: 0.8; }
@keyframes spin { 50% { opacity: 0.3; } }`,
};
const component = (body) => ({ name: "components/Card.tsx", body: `import { cx } from "../lib/cx";\nimport styles from "./Card.module.css";\n${body}` });
const check = (...files) => findCssModuleProblems([globalCss, moduleCss, ...files]);

describe("classesOf", () => {
  it("finds the classes of selectors, inside media queries too, but not :global ones, comments or keyframes", () => {
    expect([...classesOf(moduleCss.body)].sort()).toEqual(["card", "title", "wide"]);
  });
});

describe("findCssModuleProblems", () => {
  it("accepts a module whose every class is read, and global classes written as strings", () => {
    expect(check(component('<p className={cx(styles.card, styles.wide, "mono")}><b className={styles.title} /><i className="muted" /></p>'))).toEqual([]);
  });

  it("names a class the module does not have, and where it is read", () => {
    expect(check(component("<p className={cx(styles.card, styles.wide)}><b className={styles.titel} /></p>"))).toEqual([
      "components/Card.tsx:3: styles.titel is not a class of ./Card.module.css",
      "components/Card.module.css: never used: .title",
    ]);
  });

  it("refuses what it cannot check, strings that are no global class, and modules nobody imports", () => {
    const problems = check(
      component('<p className={cx(styles.card, styles.wide, styles.title)}><b className={styles[kind]} /><i className="card" /></p>'),
      { name: "components/Orphan.module.css", body: ".x { color: red; }" },
    );
    expect(problems).toEqual([
      "components/Card.tsx:3: styles[...] cannot be checked; write styles.name",
      'components/Card.tsx:3: "card" is not a class of styles/global.css',
      "components/Orphan.module.css: no component imports it",
    ]);
  });

  it("finds nothing wrong in src/", () => {
    expect(findCssModuleProblems(readSourceFiles(fileURLToPath(new URL("../src", import.meta.url))))).toEqual([]);
  });
});
