// Package sandbox runs a Python analysis script under bubblewrap (bwrap),
// with Debian's /usr/bin/python3 and its pandas, numpy and matplotlib.
//
// How to use it (for an agent):
//
//	r := &sandbox.Runner{}                 // zero value: DefaultLimits
//	if err := r.Check(ctx); err != nil {   // once, at start
//		// errors.Is(err, sandbox.ErrUnavailable): analyse without Python
//		// and say so; err names what is missing (bwrap, python3, pandas…).
//	}
//	res, err := r.Run(ctx, sandbox.Job{
//		Code:  code,                                    // the model's script
//		Files: map[string][]byte{"result.csv": csv},    // read as "result.csv"
//	})
//	// err: the sandbox could not be made (ErrUnavailable), or ctx ended.
//	// !res.OK(): give the model res.Failure(): which limit stopped it
//	// and what to do instead (res.Stopped), then the traceback's end.
//	// res.Stdout is what it printed; res.Files what it wrote (PNG charts).
//
// Each run gets a fresh directory, bound at /work and the script's
// current directory, and removed afterwards. The script sees a read-only
// /usr and the few files of /etc that Python needs (no /home, /root,
// /etc/shadow or Loom's database), a private /tmp, no network, and no
// other process. It runs as user 65534 with no capabilities, cannot make
// namespaces, and a seccomp filter refuses the system calls an analysis
// never needs (ptrace, keyrings, bpf, perf events, io_uring, mounts…).
// When Loom runs as root, bwrap itself is started as user 65534, because
// the kernel does not hold root to a process-count limit. prlimit
// (util-linux) sets the CPU-time (per process), address-space,
// process-count and file-size limits on the interpreter; the Runner kills
// the whole sandbox when the wall time, the output size or the work
// directory's size is exceeded. A script that fails or is
// stopped is a Result with a nonzero ExitCode, never an error, and the
// next run is unaffected.
//
// Debian packages: bubblewrap, python3, python3-pandas, python3-numpy,
// python3-matplotlib, util-linux; fonts-arphic-gbsn00lp or fonts-noto-cjk
// for Chinese labels in charts. The kernel must allow user namespaces
// (it does by default; in a container, the container must allow them).
package sandbox
