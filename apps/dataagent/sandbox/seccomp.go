package sandbox

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// refused are the system calls a script gets EPERM for: tracing and
// reading other processes, kernel keyrings, BPF, perf events,
// userfaultfd and io_uring (the kernel's usual ways in), namespaces and
// mounts, modules, kexec, clocks, swap and reboot. An analysis script
// needs none of them.
var refused = []uintptr{
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV, unix.SYS_KCMP, unix.SYS_PIDFD_GETFD,
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD,
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_UNSHARE, unix.SYS_SETNS,
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_CHROOT,
	unix.SYS_OPEN_TREE, unix.SYS_MOVE_MOUNT, unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK,
	unix.SYS_MOUNT_SETATTR, unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_NAME_TO_HANDLE_AT, unix.SYS_FANOTIFY_INIT,
	unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE, unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD,
	unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME, unix.SYS_CLOCK_ADJTIME, unix.SYS_ADJTIMEX,
	unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_REBOOT, unix.SYS_ACCT, unix.SYS_QUOTACTL, unix.SYS_SYSLOG, unix.SYS_VHANGUP,
}

// seccompFilter is the classic BPF program bwrap installs before it
// starts the interpreter: the refused calls fail with EPERM, and a call
// from another architecture's ABI (x32, 32-bit) ends the process. It is
// nil on an architecture the filter does not know.
func seccompFilter() ([]byte, error) {
	var arch uint32
	switch runtime.GOARCH {
	case "amd64":
		arch = unix.AUDIT_ARCH_X86_64
	case "arm64":
		arch = unix.AUDIT_ARCH_AARCH64
	default:
		return nil, nil
	}
	const x32 = 0x40000000 // x86-64's x32 ABI numbers its calls from here
	k := len(refused)
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: arch, SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS},
		bpf.LoadAbsolute{Off: 0, Size: 4}, // seccomp_data.nr
		bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32, SkipTrue: uint8(k + 1)},
	}
	for i, nr := range refused {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(nr), SkipTrue: uint8(k - i)})
	}
	prog = append(prog,
		bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(syscall.EPERM)},
	)
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("assembling the seccomp filter: %w", err)
	}
	out := make([]byte, 0, 8*len(raw))
	for _, in := range raw { // struct sock_filter, in the machine's byte order
		out = binary.NativeEndian.AppendUint16(out, in.Op)
		out = append(out, in.Jt, in.Jf)
		out = binary.NativeEndian.AppendUint32(out, in.K)
	}
	return out, nil
}

// seccompPipe is a pipe holding the filter for bwrap to read, or nil when
// there is no filter for this architecture.
func seccompPipe() (*os.File, error) {
	prog, err := seccompFilter()
	if err != nil || prog == nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("making the seccomp pipe: %w", err)
	}
	defer w.Close()
	// A few hundred bytes: the pipe's buffer holds them, so this does
	// not wait for bwrap.
	if _, err := w.Write(prog); err != nil {
		r.Close()
		return nil, fmt.Errorf("writing the seccomp filter: %w", err)
	}
	return r, nil
}
