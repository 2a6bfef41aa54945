import { execFileSync, spawn, spawnSync } from "node:child_process";
import { chmodSync, lstatSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  changedAlike,
  expectSameCommit,
  gitsWaySuite,
  gradeGitsWay,
  gradeInProcess,
  keptIndexMeta,
  putTimesBack,
  settle,
  workspaceOf,
} from "../../test/fixtures/kept-index";
import type { Workspace } from "./workspace";

// A hostile worker against the engine's own snapshot of a file-check grading (commit c59511f): a base file whose lstat
// still shows, to the nanosecond, the ctime and mtime the checkout's kept index recorded (both before the fence), and
// the same inode, device, owner, size, type and exec bit, is taken to be the base's blob unread. Each route here is a
// way of changing a tracked file's bytes that kept-index-attack.test.ts does not try: the kernel's other write paths
// (fallocate, copy_file_range, splice, sendfile, O_DIRECT, io_uring, a read(2) into a shared mapping, the Dirty Pipe
// splice), a write from a time namespace, metadata-only changes (xattrs, chattr, a same-size truncate), and a folder
// moved away and back around a write. Each must move the file's ctime past the fence (measured on ext4, Linux 6.18:
// the report of the commit that added this file), so the engine reads it and commits what `git add -A` on a fresh
// index of the base commits. The last test shows the one kernel path that changes a file without moving its ctime — a
// shared mapping already write-faulted — and why no worker holds one: its fault must come before the fence.

const tmp = gitsWaySuite("ocw-kept-stats-attack-");
let n = 0;

const NINE = "nine.txt";
/** A file of two blocks (fallocate's collapse and insert ranges, O_DIRECT: whole blocks of a larger file). */
const BIG = "big.bin";
const BLOCK = 4096;
function attackRepo(): string {
  const dir = path.join(tmp, `repo-${n++}`);
  execFileSync("git", ["init", "-q", "-b", "main", dir]);
  const files: Record<string, string> = {
    ".gitignore": "hold/\n",
    [NINE]: "123456789",
    "other.txt": "abcdefghi",
    "p/x.txt": "p-x-file\n",
    "q/x.txt": "q-x-file\n",
    [BIG]: "b".repeat(BLOCK) + "B".repeat(BLOCK),
    "run.sh": "#!/bin/sh\n",
  };
  for (const [f, c] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    writeFileSync(path.join(dir, f), c);
  }
  chmodSync(path.join(dir, "run.sh"), 0o755);
  symlinkSync("ABCDEFGHI", path.join(dir, "lnk"));
  execFileSync("git", ["-C", dir, "add", "-A"]);
  execFileSync("git", ["-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init"]);
  return dir;
}

const workspace = (r: string) => workspaceOf(tmp, r, `w-${n++}`);

const meta = keptIndexMeta;
const grade = (ws: Workspace) => gradeGitsWay(ws, path.join(tmp, `checkout-${n++}`), "ocw: attack");

type Stat = { ino: bigint; size: bigint; mtimeNs: bigint; ctimeNs: bigint; nlink: bigint };
const stat = (f: string) => lstatSync(f, { bigint: true }) as unknown as Stat;
/** Runs a python3 program with the file and the other arguments as sys.argv[1:]. */
const py = (code: string, ...args: string[]) => execFileSync("python3", ["-c", code, ...args]);
const FALLOCATE = `import ctypes,os,sys
libc=ctypes.CDLL(None,use_errno=True)
fd=os.open(sys.argv[1],os.O_RDWR)
if libc.fallocate(fd,ctypes.c_int(int(sys.argv[2],0)),ctypes.c_long(int(sys.argv[3])),ctypes.c_long(int(sys.argv[4]))):
    e=ctypes.get_errno(); raise OSError(e,os.strerror(e))
os.close(fd)`;
const KEEP_SIZE = 0x01;
const PUNCH_HOLE = 0x02;
const COLLAPSE_RANGE = 0x08;
const ZERO_RANGE = 0x10;
const INSERT_RANGE = 0x20;
const fallocate = (f: string, mode: number, offset: number, length: number) => py(FALLOCATE, f, String(mode), String(offset), String(length));

/** The route's bytes changed, then the mtime put back: only the ctime (and what the route cannot keep) tells. */
const timesBack = (rel: string, change: (f: string) => void) => (w: string) => {
  const f = path.join(w, rel);
  const st = stat(f);
  change(f);
  putTimesBack(f, st);
};

/**
 * A C program that writes its second argument at the start of the file named first through io_uring (no write(2)):
 * IORING_OP_WRITE, or IORING_OP_WRITE_FIXED from a registered buffer with a third argument `fixed`. Built once where a
 * C compiler is (null: the routes are skipped).
 */
const URING_C = String.raw`#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <linux/io_uring.h>
int main(int argc, char **argv) {
  struct io_uring_params p; memset(&p, 0, sizeof p);
  int ring = syscall(__NR_io_uring_setup, 4, &p);
  if (ring < 0) { perror("io_uring_setup"); return 2; }
  char *sq = mmap(0, p.sq_off.array + p.sq_entries * sizeof(unsigned), PROT_READ|PROT_WRITE, MAP_SHARED|MAP_POPULATE, ring, IORING_OFF_SQ_RING);
  char *cq = mmap(0, p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe), PROT_READ|PROT_WRITE, MAP_SHARED|MAP_POPULATE, ring, IORING_OFF_CQ_RING);
  struct io_uring_sqe *sqes = mmap(0, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ|PROT_WRITE, MAP_SHARED|MAP_POPULATE, ring, IORING_OFF_SQES);
  if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED) { perror("mmap"); return 2; }
  int fd = open(argv[1], O_RDWR);
  size_t n = strlen(argv[2]);
  char *buf = aligned_alloc(4096, 4096); memcpy(buf, argv[2], n);
  int fixed = argc > 3 && !strcmp(argv[3], "fixed");
  if (fixed) {
    struct iovec iov = { buf, 4096 };
    if (syscall(__NR_io_uring_register, ring, IORING_REGISTER_BUFFERS, &iov, 1) < 0) { perror("register"); return 2; }
  }
  unsigned tail = *(unsigned *)(sq + p.sq_off.tail), mask = *(unsigned *)(sq + p.sq_off.ring_mask);
  struct io_uring_sqe *s = &sqes[tail & mask]; memset(s, 0, sizeof *s);
  s->opcode = fixed ? IORING_OP_WRITE_FIXED : IORING_OP_WRITE; s->fd = fd; s->addr = (unsigned long)buf; s->len = n; s->off = 0;
  ((unsigned *)(sq + p.sq_off.array))[tail & mask] = tail & mask;
  __atomic_store_n((unsigned *)(sq + p.sq_off.tail), tail + 1, __ATOMIC_RELEASE);
  if (syscall(__NR_io_uring_enter, ring, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0) { perror("enter"); return 2; }
  unsigned head = *(unsigned *)(cq + p.cq_off.head);
  struct io_uring_cqe *c = &((struct io_uring_cqe *)(cq + p.cq_off.cqes))[head & *(unsigned *)(cq + p.cq_off.ring_mask)];
  if (c->res < 0) { fprintf(stderr, "write: %s\n", strerror(-c->res)); return 2; }
  return c->res == (int)n ? 0 : 3;
}
`;
const uring = (() => {
  const dir = path.join(tmp, "uring");
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, "uring.c"), URING_C);
  const bin = path.join(dir, "uring");
  if (spawnSync("cc", ["-O1", "-o", bin, path.join(dir, "uring.c")]).status !== 0) return null;
  // io_uring may be off (kernel.io_uring_disabled, a seccomp filter): then there is nothing to try.
  writeFileSync(path.join(dir, "probe"), "x");
  return spawnSync(bin, [path.join(dir, "probe"), "y"]).status === 0 ? bin : null;
})();

/** Whether this machine lets a process make a user and time namespace (unshare -U -r -T). */
const timeNamespaces = spawnSync("unshare", ["-U", "-r", "-T", "--monotonic=1000000", "--boottime=1000000", "true"]).status === 0;

type Route = [string, (w: string) => void];
const routes: Route[] = [
  ["fallocate punch-hole (keep size) zeroes its bytes, mtime put back", timesBack(NINE, (f) => fallocate(f, KEEP_SIZE | PUNCH_HOLE, 0, BLOCK))],
  ["fallocate zero-range (keep size) zeroes a block, mtime put back", timesBack(BIG, (f) => fallocate(f, KEEP_SIZE | ZERO_RANGE, BLOCK, BLOCK))],
  [
    "fallocate collapse-range then insert-range (same size, first block now a hole), mtime put back",
    timesBack(BIG, (f) => {
      fallocate(f, COLLAPSE_RANGE, 0, BLOCK);
      fallocate(f, INSERT_RANGE, 0, BLOCK);
    }),
  ],
  [
    "copy_file_range from another file onto it, mtime put back",
    timesBack(NINE, (f) =>
      py(
        "import os,sys\ns=os.open(sys.argv[2],os.O_RDONLY)\nd=os.open(sys.argv[1],os.O_RDWR)\nos.copy_file_range(s,d,9,0,0)",
        f,
        path.join(path.dirname(f), "other.txt"),
      ),
    ),
  ],
  [
    "spliced into from a pipe, mtime put back",
    timesBack(NINE, (f) => py("import os,sys\nr,w=os.pipe()\nos.write(w,b'SPLICED!!')\nd=os.open(sys.argv[1],os.O_RDWR)\nos.splice(r,d,9,offset_dst=0)", f)),
  ],
  [
    "sendfile from another file into it, mtime put back",
    timesBack(NINE, (f) =>
      py(
        "import os,sys\ns=os.open(sys.argv[2],os.O_RDONLY)\nd=os.open(sys.argv[1],os.O_RDWR)\nos.sendfile(d,s,0,9)",
        f,
        path.join(path.dirname(f), "other.txt"),
      ),
    ),
  ],
  [
    "an O_DIRECT write of a whole block (past the page cache), mtime put back",
    timesBack(BIG, (f) =>
      py("import mmap,os,sys\nb=mmap.mmap(-1,4096)\nb.write(b'D'*4096)\nfd=os.open(sys.argv[1],os.O_RDWR|os.O_DIRECT)\nos.pwrite(fd,b,0)\nos.close(fd)", f),
    ),
  ],
  [
    "written through /proc/self/fd/N of a read-only descriptor (reopened for writing), mtime put back",
    timesBack(NINE, (f) => py("import os,sys\nfd=os.open(sys.argv[1],os.O_RDONLY)\nwith open(f'/proc/self/fd/{fd}','r+b') as h: h.write(b'PROCFD')", f)),
  ],
  [
    "read(2) from another file into a shared mapping of it (the kernel writes the mapped page), mtime put back",
    timesBack(NINE, (f) =>
      py(
        "import mmap,os,sys\nh=open(sys.argv[1],'r+b')\nm=mmap.mmap(h.fileno(),0)\ns=os.open(sys.argv[2],os.O_RDONLY)\nos.readv(s,[m])\nm.flush()\nm.close()",
        f,
        path.join(path.dirname(f), "other.txt"),
      ),
    ),
  ],
  [
    "the Dirty Pipe splice (a page of it spliced into a merge-flagged pipe, then the pipe written): the kernel keeps it unchanged",
    (w) =>
      py(
        "import fcntl,os,sys\nr,w=os.pipe()\nn=fcntl.fcntl(w,1032)\nos.write(w,b'x'*n)\nos.read(r,n)\nfd=os.open(sys.argv[1],os.O_RDONLY)\nos.splice(fd,w,1,offset_src=0)\nos.write(w,b'DIRTY')",
        path.join(w, NINE),
      ),
  ],
  [
    "a user xattr set and removed (no change of bytes: read again, the same commit)",
    (w) => py("import os,sys\nos.setxattr(sys.argv[1],'user.ocw',b'1')\nos.removexattr(sys.argv[1],'user.ocw')", path.join(w, NINE)),
  ],
  [
    "a user xattr set on a file rewritten with the same size, mtime put back",
    timesBack(NINE, (f) => {
      writeFileSync(f, "XATTRED!!");
      py("import os,sys\nos.setxattr(sys.argv[1],'user.ocw',b'1')", f);
    }),
  ],
  [
    "chattr +A and -A (no change of bytes)",
    (w) => {
      execFileSync("chattr", ["+A", path.join(w, NINE)]);
      execFileSync("chattr", ["-A", path.join(w, NINE)]);
    },
  ],
  ["truncated to its own size (no change of bytes), mtime put back", timesBack(NINE, (f) => execFileSync("truncate", ["-s", "9", f]))],
  [
    "its folder moved away, the file rewritten there (the file itself never renamed), the folder moved back, mtime put back",
    (w) => {
      const f = path.join(w, "p/x.txt");
      const st = stat(f);
      renameSync(path.join(w, "p"), path.join(w, "hold-p"));
      writeFileSync(path.join(w, "hold-p/x.txt"), "p-X-FILE\n");
      renameSync(path.join(w, "hold-p"), path.join(w, "p"));
      putTimesBack(f, st);
    },
  ],
  [
    "its folder moved away and a new folder made with a hard link to the moved file rewritten, mtime put back",
    (w) => {
      const f = path.join(w, "p/x.txt");
      const st = stat(f);
      mkdirSync(path.join(w, "hold"), { recursive: true });
      renameSync(path.join(w, "p"), path.join(w, "hold/p"));
      mkdirSync(path.join(w, "p"));
      execFileSync("ln", [path.join(w, "hold/p/x.txt"), f]);
      writeFileSync(path.join(w, "hold/p/x.txt"), "p-linked\n");
      putTimesBack(f, st);
    },
  ],
];
const uringRoutes: Route[] = [
  ["written through io_uring (IORING_OP_WRITE), mtime put back", timesBack(NINE, (f) => execFileSync(uring!, [f, "URING"]))],
  [
    "written through io_uring from a registered buffer (IORING_OP_WRITE_FIXED), mtime put back",
    timesBack(NINE, (f) => execFileSync(uring!, [f, "FIXED", "fixed"])),
  ],
];
const timeRoutes: Route[] = [
  [
    "rewritten inside a user and time namespace whose clocks are offset (unshare -T), mtime put back there",
    (w) => {
      const f = path.join(w, NINE);
      const st = stat(f);
      const at = `@${st.mtimeNs / 1_000_000_000n}.${String(st.mtimeNs % 1_000_000_000n).padStart(9, "0")}`;
      execFileSync("unshare", [
        "-U",
        "-r",
        "-T",
        "--monotonic=1000000",
        "--boottime=1000000",
        "sh",
        "-c",
        'printf TIMESPACE > "$1" && touch -d "$2" "$1"',
        "sh",
        f,
        at,
      ]);
    },
  ],
];

type When = "settled" | "same second";

const inProcess = (ws: Workspace) => gradeInProcess(ws, path.join(tmp, `checkout-${n++}`));

/** The route on a workspace with its kept index (the engine's own snapshot) and on one without (the oracle: git's way from the base's index). */
async function attackInProcess(route: Route, when: When) {
  const r = attackRepo();
  const { kept, before } = await changedAlike(() => workspace(r), route[1], { settled: when === "settled" });
  const g = await inProcess(kept);
  const o = await grade(before);
  expectSameCommit(g, o);
  // The engine did use the kept stat data (it read fewer files than the base has).
  expect(g.filesRead).toBeLessThan(8);
  return { g, o };
}

for (const [title, when] of [
  ["a worker's change by another kernel path: the engine's own snapshot (kept stat data) commits what git's way commits from the base's index", "settled"],
  ["the same, changed within the checkout's own second (right after the fence)", "same second"],
] as const)
  describe(title, () => {
    it.each(routes)("%s", async (...route) => void (await attackInProcess(route as Route, when)), 30_000);
    it.skipIf(!uring).each(uringRoutes)("%s", async (...route) => void (await attackInProcess(route as Route, when)), 30_000);
    it.skipIf(!timeNamespaces).each(timeRoutes)("%s", async (...route) => void (await attackInProcess(route as Route, when)), 30_000);
  });

describe("the routes are changes (the oracle sees them), and each moved the file's ctime", () => {
  it.each<[string, string]>([
    ["fallocate punch-hole (keep size) zeroes its bytes, mtime put back", NINE],
    ["fallocate collapse-range then insert-range (same size, first block now a hole), mtime put back", BIG],
    ["an O_DIRECT write of a whole block (past the page cache), mtime put back", BIG],
    ["read(2) from another file into a shared mapping of it (the kernel writes the mapped page), mtime put back", NINE],
    ["its folder moved away, the file rewritten there (the file itself never renamed), the folder moved back, mtime put back", "p/x.txt"],
  ])(
    "%s",
    async (name, file) => {
      const route = routes.find(([r]) => r === name)!;
      const r = attackRepo();
      const ws = await workspace(r);
      await settle();
      const st = stat(path.join(ws.worktree, file));
      route[1](ws.worktree);
      const now = stat(path.join(ws.worktree, file));
      // Same inode, size and mtime: the ctime alone tells.
      expect([now.ino, now.size, now.mtimeNs]).toEqual([st.ino, st.size, st.mtimeNs]);
      expect(now.ctimeNs).toBeGreaterThan(st.ctimeNs);
      const g = await inProcess(ws);
      expect(g.changed).toContain(file);
    },
    30_000,
  );

  it.skipIf(!timeNamespaces)(
    "a time namespace offsets the monotonic and boot clocks only: the ctime it stamps is the real time",
    async () => {
      const r = attackRepo();
      const ws = await workspace(r);
      await settle();
      const f = path.join(ws.worktree, NINE);
      const st = stat(f);
      const t0 = BigInt(Date.now()) * 1_000_000n;
      timeRoutes[0]![1](ws.worktree);
      const now = stat(f);
      expect(now.mtimeNs).toBe(st.mtimeNs);
      // Stamped with the real clock (coarse: a tick behind Date.now at most), not the namespace's.
      expect(now.ctimeNs).toBeGreaterThan(t0 - 50_000_000n);
      expect((await inProcess(ws)).changed).toEqual([NINE]);
    },
    30_000,
  );
});

describe("no alias of a checked-out file exists before the fence", () => {
  it("every tracked file of a new workspace has one link (a write through any later alias moves the one inode's ctime)", async () => {
    const r = attackRepo();
    const ws = await workspace(r);
    const files = execFileSync("git", ["-C", ws.worktree, "ls-files", "-z"], { encoding: "utf8" }).split("\0").filter(Boolean);
    expect(files.length).toBeGreaterThan(5);
    for (const f of files) expect([f, stat(path.join(ws.worktree, f)).nlink]).toEqual([f, 1n]);
  }, 30_000);
});

/**
 * The kept index taken again now (as keepCheckoutIndex takes it: a copy of the workspace's index, its checksum, a fence
 * of this moment): a stand-in for a checkout whose stat data was recorded after a process had already faulted a page.
 */
function keepIndexNow(ws: Workspace) {
  const env = { ...process.env, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" };
  execFileSync("git", ["-C", ws.worktree, "update-index", "-q", "--really-refresh"], { env });
  const bytes = readFileSync(path.join(ws.worktree, ".git/index"));
  writeFileSync(path.join(ws.gitDir, "checkout-index"), bytes);
  const stamp = path.join(ws.worktree, ".git", "attack-fence");
  writeFileSync(stamp, "");
  const fence = stat(stamp).ctimeNs;
  rmSync(stamp);
  const m = JSON.parse(readFileSync(meta(ws), "utf8"));
  writeFileSync(meta(ws), JSON.stringify({ ...m, fence: fence.toString(), checksum: bytes.subarray(bytes.length - 20).toString("hex") }));
}

describe("the boundary of the ctime argument: a shared mapping write-faulted before the fence", () => {
  // Writes through a shared mapping fault once per page (page_mkwrite: the file's times move then); a page already
  // dirty and writable takes more writes with no fault, so no time moves, until writeback write-protects it again
  // (vm.dirty_expire_centisecs, 30 s here). A process that faulted a page of a tracked file before the checkout's stat
  // data was recorded, and is still running after the fence, can change it unseen — by git's own stat check too. No
  // worker has one: its commands start after the fence (createWorkspace takes it before handing over the workspace),
  // each in its own pid namespace that kills whatever it leaves running, and opencode's LSP and formatters are off.
  // Reported as a limit of the trust, not a route of a worker: it.fails, so a change that closes it shows.
  it.fails("BOUNDARY (not reachable by a worker): bytes written after the fence through a mapping faulted before it are not in the engine's commit", async () => {
    const r = attackRepo();
    const ws = await workspace(r);
    const f = path.join(ws.worktree, NINE);
    await settle();
    // The process: maps the file, writes its first byte back as it was (a fault, the times move), waits, then writes
    // new bytes through the same page (no fault) and exits.
    const child = spawn(
      "python3",
      [
        "-c",
        "import mmap,sys\nh=open(sys.argv[1],'r+b')\nm=mmap.mmap(h.fileno(),0)\nm[0:1]=m[0:1]\nprint('faulted',flush=True)\nsys.stdin.readline()\nm[0:9]=b'MAPPED!!!'\nprint('written',flush=True)",
        f,
      ],
      { stdio: ["pipe", "pipe", "inherit"] },
    );
    const lines: string[] = [];
    const next = () =>
      new Promise<string>((resolve) => {
        const have = () => lines.shift();
        const l = have();
        if (l) return resolve(l);
        child.stdout.once("data", (b: Buffer) => {
          lines.push(...b.toString().trim().split("\n"));
          resolve(have()!);
        });
      });
    expect(await next()).toBe("faulted");
    // Of an earlier second than the index written now (else git smudges the entry, racily clean, and it is read).
    await settle();
    keepIndexNow(ws);
    const st = stat(f);
    child.stdin.write("go\n");
    expect(await next()).toBe("written");
    await new Promise((r) => child.once("exit", r));
    const now = stat(f);
    // The bytes changed; no time, inode or size did.
    expect(readFileSync(f, "utf8")).toBe("MAPPED!!!");
    expect([now.ino, now.size, now.mtimeNs, now.ctimeNs]).toEqual([st.ino, st.size, st.mtimeNs, st.ctimeNs]);
    const g = await inProcess(ws);
    rmSync(meta(ws));
    const o = await grade(ws);
    expect(o.changed).toEqual([NINE]);
    expect(g.changed).toEqual(o.changed);
  }, 30_000);
});
