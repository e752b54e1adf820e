//go:build amd64 && !purego

package cpulevel

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// Linux gives a process the AMX tile registers only on request: the
// first tile instruction of a process that has not asked faults. The
// request is process-wide and lasts for the process's life.
const (
	archGetXcompPerm = 0x1022 // ARCH_GET_XCOMP_PERM
	archReqXcompPerm = 0x1023 // ARCH_REQ_XCOMP_PERM
	xfeatureTileData = 18     // XFEATURE_XTILEDATA
)

// amxGranted reports whether this process may execute AMX instructions: the
// CPU has them and the kernel granted the tile data state.
var amxGranted = requestAMX()

func requestAMX() bool {
	if !cpu.X86.HasAMXTile || !cpu.X86.HasAMXBF16 {
		return false
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archReqXcompPerm, xfeatureTileData, 0); e != 0 {
		return false
	}
	var perm uint64
	if _, _, e := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archGetXcompPerm, uintptr(unsafe.Pointer(&perm)), 0); e != 0 {
		return false
	}
	return perm&(1<<xfeatureTileData) != 0
}
