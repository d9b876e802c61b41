// In-process timings of just-bash for bench/world.sh: new Bash().exec(SCRIPT) per iteration,
// and a fork of a 1 MB world file the way a JSON world is forked (a copy of the file).
// Usage: node inproc.mjs JUST_BASH_DIR WORLD_FILE N SCRIPT
import { copyFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";

const [dir, worldFile, n, script] = process.argv.slice(2);
const require = createRequire(dir + "/");
const { Bash } = require("just-bash");
const median = (a) => a.sort((x, y) => x - y)[Math.floor(a.length / 2)];

const execs = [];
for (let i = 0; i < Number(n); i++) {
  const t0 = process.hrtime.bigint();
  const bash = new Bash({ cwd: "/home/user" });
  const r = await bash.exec(script);
  execs.push(Number(process.hrtime.bigint() - t0) / 1e6);
  if (i === 0 && r.exitCode !== 0) {
    console.error("just-bash exit", r.exitCode, r.stderr);
  }
}
const forks = [];
for (let i = 0; i < Number(n); i++) {
  const dst = `${worldFile}.jsfork${i}`;
  const t0 = process.hrtime.bigint();
  copyFileSync(worldFile, dst);
  forks.push(Number(process.hrtime.bigint() - t0) / 1e6);
  rmSync(dst);
}
console.log(JSON.stringify({ exec_ms: median(execs), fork_ms: median(forks) }));
