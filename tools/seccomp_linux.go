package tools

import (
	"encoding/binary"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// Classic BPF, as seccomp reads it.
const (
	bpfLoadWord = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	bpfJumpEq   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	bpfJumpGE   = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
	bpfReturn   = unix.BPF_RET | unix.BPF_K
)

// x32Bit marks the syscall numbers of amd64's x32 ABI.
const x32Bit = 0x40000000

// keyringSyscalls are the syscalls that reach the kernel's keyrings,
// which no namespace separates from this process's: the sandbox runs as
// this process's user (as root where this process is root), so without
// this filter a command could read the keys this user keeps there.
var keyringSyscalls = []uint32{unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY, unix.SYS_KEYCTL}

// seccompFilter returns the seccomp program (struct sock_filter array, in
// this machine's byte order) bwrap installs with --seccomp: the keyring
// syscalls and those of amd64's x32 ABI fail with EPERM, a syscall of
// another architecture (32-bit code) kills the process, everything else
// is allowed. It returns nil where the architecture is not known here.
func seccompFilter() []byte {
	var arch uint32
	switch runtime.GOARCH {
	case "amd64":
		arch = unix.AUDIT_ARCH_X86_64
	case "arm64":
		arch = unix.AUDIT_ARCH_AARCH64
	default:
		return nil
	}
	type insn struct {
		code   uint16
		jt, jf uint8
		k      uint32
	}
	prog := []insn{
		{bpfLoadWord, 0, 0, 4}, // seccomp_data.arch
		{bpfJumpEq, 1, 0, arch},
		{bpfReturn, 0, 0, unix.SECCOMP_RET_KILL_PROCESS},
		{bpfLoadWord, 0, 0, 0}, // seccomp_data.nr
	}
	// The jumps to deny are patched below, once its place is known.
	var toDeny []int
	if runtime.GOARCH == "amd64" {
		toDeny = append(toDeny, len(prog))
		prog = append(prog, insn{bpfJumpGE, 0, 0, x32Bit})
	}
	for _, nr := range keyringSyscalls {
		toDeny = append(toDeny, len(prog))
		prog = append(prog, insn{bpfJumpEq, 0, 0, nr})
	}
	prog = append(prog, insn{bpfReturn, 0, 0, unix.SECCOMP_RET_ALLOW})
	deny := len(prog)
	prog = append(prog, insn{bpfReturn, 0, 0, unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)})
	for _, i := range toDeny {
		prog[i].jt = uint8(deny - i - 1)
	}
	out := make([]byte, 0, 8*len(prog))
	for _, in := range prog {
		out = binary.NativeEndian.AppendUint16(out, in.code)
		out = append(out, in.jt, in.jf)
		out = binary.NativeEndian.AppendUint32(out, in.k)
	}
	return out
}

// seccompProgram is seccompFilter's program, built once.
var seccompProgram = sync.OnceValue(seccompFilter)

// seccompFile returns a file from which bwrap reads seccompFilter's
// program, or nil.
func seccompFile() *os.File {
	prog := seccompProgram()
	if prog == nil {
		return nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil
	}
	defer w.Close()
	if _, err := w.Write(prog); err != nil { // far below a pipe's buffer
		r.Close()
		return nil
	}
	return r
}
