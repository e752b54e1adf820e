package dist

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// Shared-memory segment layout of one group (all offsets in bytes):
//
//	[0, 4096)             header: magic, world size, slot bytes, p2p bytes
//	[4096, +N*ctlSize)    one control block per rank (see ctl* offsets)
//	data                  per rank, two collective slots of slotBytes each
//	p2p                   per ordered pair (src, dst), a mailbox: a header
//	                      page (produced/consumed counters) and two slots
//
// Ranks move through collectives in lock step: each "step" bumps the
// rank's step counter and waits until every other rank's counter reaches
// it. The two slots alternate chunk by chunk, so a rank fills slot k%2
// only after every rank has passed the step that follows its reads of
// chunk k-2.
const (
	shmMagic   = 0x6770752d64697374 // "gpu-dist"
	headerSize = 4096
	ctlSize    = 1024

	ctlPid       = 0
	ctlHeartbeat = 8
	ctlStep      = 16
	ctlState     = 24
	ctlSeq       = 32
	ctlDesc      = 64 // two descriptor slots of descSize, by seq parity
	descSize     = 256
	ctlAbort     = 64 + 2*descSize // abort message: 4-byte length + text
	abortMax     = ctlSize - ctlAbort - 4

	p2pHeader = 4096 // produced counter at 0, consumed counter at 64
	msgHeader = 256  // per p2p slot: 4-byte descriptor length + text

	stateAlive   = 1
	stateAborted = 2
	stateClosed  = 3
)

// DefaultSlotBytes is the size of each rank's two collective slots; a
// collective moves large tensors through them in chunks of this size.
// Chunks that stay in the L2 cache between copy-in, reduction and
// copy-out beat larger ones: on a Zen 5 host 256 KiB gave about 1.5x the
// 16 MB bus bandwidth of 4 MiB (gotpu bench allreduce with
// GOTPU_DIST_SLOT_BYTES).
const DefaultSlotBytes = 256 << 10

// DefaultP2PBytes is the size of each of the two slots of a send/recv
// mailbox (one mailbox per ordered pair of ranks).
const DefaultP2PBytes = 256 << 10

type segment struct {
	mem       []byte
	path      string
	n         int
	slot      int
	p2p       int
	dataOff   int
	p2pOff    int
	p2pStride int
}

func roundUp(n, m int) int { return (n + m - 1) / m * m }

func layout(n, slot, p2p int) (dataOff, p2pOff, p2pStride, total int) {
	dataOff = roundUp(headerSize+n*ctlSize, 4096)
	p2pOff = dataOff + n*2*slot
	p2pStride = p2pHeader + 2*p2p
	total = p2pOff + n*n*p2pStride
	return
}

// shmDir is where segments live: /dev/shm when it exists (memory-backed),
// else the temporary directory.
func shmDir() string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		return "/dev/shm"
	}
	return os.TempDir()
}

// removeStale deletes the segment files of processes that no longer
// exist: a creator unlinks its segment as soon as every rank mapped it, so
// only a creator killed during the rendezvous leaves one behind. Names are
// gotpu-dist-<pid>-<group>-<random>[.tmp].
func removeStale(dir string) {
	names, _ := filepath.Glob(filepath.Join(dir, "gotpu-dist-*"))
	for _, p := range names {
		rest := strings.TrimPrefix(filepath.Base(p), "gotpu-dist-")
		i := strings.IndexByte(rest, '-')
		if i <= 0 {
			continue
		}
		pid, err := strconv.Atoi(rest[:i])
		if err != nil || pid <= 0 || pid == os.Getpid() || pidAlive(pid) {
			continue
		}
		os.Remove(p)
	}
}

// createSegment makes a new segment file atomically (written under a
// temporary name, then renamed) and maps it, after removing the segments
// that killed processes left.
func createSegment(name string, n, slot, p2p int) (*segment, error) {
	removeStale(shmDir())
	_, _, _, total := layout(n, slot, p2p)
	var rnd [6]byte
	rand.Read(rnd[:])
	final := filepath.Join(shmDir(), fmt.Sprintf("gotpu-dist-%s-%s", name, hex.EncodeToString(rnd[:])))
	tmp := final + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("dist: create shared memory %s: %w", tmp, err)
	}
	defer f.Close()
	if err := f.Truncate(int64(total)); err != nil {
		os.Remove(tmp)
		return nil, fmt.Errorf("dist: size shared memory %s to %d bytes: %w", tmp, total, err)
	}
	s, err := mapSegment(f, total, n, slot, p2p)
	if err != nil {
		os.Remove(tmp)
		return nil, err
	}
	binary.LittleEndian.PutUint64(s.mem[8:], uint64(n))
	binary.LittleEndian.PutUint64(s.mem[16:], uint64(slot))
	binary.LittleEndian.PutUint64(s.mem[24:], uint64(p2p))
	s.u64(0).Store(shmMagic)
	if err := os.Rename(tmp, final); err != nil {
		s.unmap()
		os.Remove(tmp)
		return nil, fmt.Errorf("dist: publish shared memory %s: %w", final, err)
	}
	s.path = final
	return s, nil
}

// openSegment maps a segment another rank created.
func openSegment(path string) (*segment, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("dist: open shared memory %s (all ranks of the built-in engine must run on one host): %w", path, err)
	}
	defer f.Close()
	var hdr [32]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		return nil, fmt.Errorf("dist: read shared memory header %s: %w", path, err)
	}
	if binary.LittleEndian.Uint64(hdr[:]) != shmMagic {
		return nil, fmt.Errorf("dist: %s is not a gotpu shared memory segment", path)
	}
	n := int(binary.LittleEndian.Uint64(hdr[8:]))
	slot := int(binary.LittleEndian.Uint64(hdr[16:]))
	p2p := int(binary.LittleEndian.Uint64(hdr[24:]))
	_, _, _, total := layout(n, slot, p2p)
	s, err := mapSegment(f, total, n, slot, p2p)
	if err != nil {
		return nil, err
	}
	s.path = path
	return s, nil
}

func mapSegment(f *os.File, total, n, slot, p2p int) (*segment, error) {
	mem, err := syscall.Mmap(int(f.Fd()), 0, total, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("dist: map %d bytes of shared memory %s: %w", total, f.Name(), err)
	}
	s := &segment{mem: mem, n: n, slot: slot, p2p: p2p}
	s.dataOff, s.p2pOff, s.p2pStride, _ = layout(n, slot, p2p)
	return s, nil
}

func (s *segment) unmap() {
	if s.mem != nil {
		syscall.Munmap(s.mem)
		s.mem = nil
	}
}

func (s *segment) u64(off int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&s.mem[off]))
}

func (s *segment) i64(off int) *atomic.Int64 {
	return (*atomic.Int64)(unsafe.Pointer(&s.mem[off]))
}

func (s *segment) u32(off int) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&s.mem[off]))
}

func (s *segment) ctl(r int) int { return headerSize + r*ctlSize }

func (s *segment) step(r int) *atomic.Uint64 { return s.u64(s.ctl(r) + ctlStep) }

func (s *segment) slotMem(r, k int) []byte {
	off := s.dataOff + (2*r+k)*s.slot
	return s.mem[off : off+s.slot : off+s.slot]
}

func (s *segment) mailbox(src, dst int) int { return s.p2pOff + (src*s.n+dst)*s.p2pStride }

func (s *segment) p2pSlot(src, dst, k int) []byte {
	off := s.mailbox(src, dst) + p2pHeader + k*s.p2p
	return s.mem[off : off+s.p2p : off+s.p2p]
}

// writeDesc publishes rank r's descriptor of collective seq.
func (s *segment) writeDesc(r int, seq uint64, desc string) {
	off := s.ctl(r) + ctlDesc + int(seq%2)*descSize
	if len(desc) > descSize-12 {
		desc = desc[:descSize-12]
	}
	binary.LittleEndian.PutUint32(s.mem[off+8:], uint32(len(desc)))
	copy(s.mem[off+12:], desc)
	s.u64(off).Store(seq + 1)
	s.u64(s.ctl(r) + ctlSeq).Store(seq + 1)
}

// readDesc returns rank r's descriptor of collective seq, or ok=false when
// r has not published one for seq.
func (s *segment) readDesc(r int, seq uint64) (string, bool) {
	off := s.ctl(r) + ctlDesc + int(seq%2)*descSize
	if s.u64(off).Load() != seq+1 {
		return "", false
	}
	n := int(binary.LittleEndian.Uint32(s.mem[off+8:]))
	if n > descSize-12 {
		n = descSize - 12
	}
	return string(s.mem[off+12 : off+12+n]), true
}

// lastDesc describes the last collective rank r started.
func (s *segment) lastDesc(r int) string {
	started := s.u64(s.ctl(r) + ctlSeq).Load()
	if started == 0 {
		return "no collective yet"
	}
	if d, ok := s.readDesc(r, started-1); ok {
		return fmt.Sprintf("last in %s #%d", d, started-1)
	}
	return fmt.Sprintf("last in collective #%d", started-1)
}

func (s *segment) setAbort(r int, msg string) {
	off := s.ctl(r) + ctlAbort
	if len(msg) > abortMax {
		msg = msg[:abortMax]
	}
	binary.LittleEndian.PutUint32(s.mem[off:], uint32(len(msg)))
	copy(s.mem[off+4:], msg)
	s.u32(s.ctl(r) + ctlState).Store(stateAborted)
}

func (s *segment) abortMsg(r int) string {
	off := s.ctl(r) + ctlAbort
	n := int(binary.LittleEndian.Uint32(s.mem[off:]))
	if n > abortMax {
		n = abortMax
	}
	return string(s.mem[off+4 : off+4+n])
}

// pidAlive reports whether process pid exists and is not a zombie.
func pidAlive(pid int) bool {
	if pid <= 0 {
		return true // not registered yet: unknown
	}
	if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !os.IsNotExist(err)
	}
	if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) {
		switch b[i+2] {
		case 'Z', 'X':
			return false
		}
	}
	return true
}

// waiter spins, then yields, then sleeps while a condition is false,
// checking the peers' liveness, the deadline and ctx from time to time.
type waiter struct {
	spins int
	next  time.Time
}

// The waiter's phases, in calls to pause: busy spinning, then yielding.
var spinLimit, yieldLimit = 64, 4096

// pause waits a little; check reports whether it is time for a slow check.
// It spins briefly (a peer that is about to arrive costs no system call),
// then yields the processor (which keeps the rank runnable: on a loaded
// host a sleeping rank may wait milliseconds to be scheduled again), then
// sleeps with a growing interval.
func (w *waiter) pause() (check bool) {
	w.spins++
	switch {
	case w.spins < spinLimit:
		return false
	case w.spins < yieldLimit:
		runtime.Gosched()
		if w.spins%256 != 0 {
			return false
		}
	default:
		d := time.Duration(w.spins-yieldLimit+1) * 5 * time.Microsecond
		time.Sleep(min(d, time.Millisecond))
	}
	now := time.Now()
	if now.Before(w.next) {
		return false
	}
	w.next = now.Add(5 * time.Millisecond)
	return true
}
