package safetensors

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// vmRSS returns the resident set size of this process in bytes.
func vmRSS(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("cannot read /proc/self/status: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("parse VmRSS %q: %v", rest, err)
			}
			return kb << 10
		}
	}
	t.Skip("no VmRSS in /proc/self/status")
	return 0
}

// TestOpenLargeFileIsLazy opens a sparse 2 GiB checkpoint and checks that
// opening it, listing it and taking zero-copy views of every tensor keep the
// resident memory growth under 50 MB: nothing but the header is read.
func TestOpenLargeFileIsLazy(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("RSS measurement and mmap laziness are checked on linux only")
	}
	const (
		numTensors = 64
		perTensor  = 32 << 20 // bytes: 64 × 32 MiB = 2 GiB
	)
	var hdr strings.Builder
	hdr.WriteString(`{"__metadata__":{"format":"pt"}`)
	for i := 0; i < numTensors; i++ {
		fmt.Fprintf(&hdr, `,"model.layers.%d.weight":{"dtype":"BF16","shape":[4096,%d],"data_offsets":[%d,%d]}`,
			i, perTensor/2/4096, i*perTensor, (i+1)*perTensor)
	}
	hdr.WriteString("}")
	for hdr.Len()%8 != 0 {
		hdr.WriteByte(' ')
	}
	path := filepath.Join(t.TempDir(), "big.safetensors")
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var prefix [8]byte
	for i := range prefix {
		prefix[i] = byte(uint64(hdr.Len()) >> (8 * i))
	}
	fh.Write(prefix[:])
	fh.WriteString(hdr.String())
	total := int64(8+hdr.Len()) + numTensors*perTensor
	if err := fh.Truncate(total); err != nil {
		t.Fatal(err)
	}
	fh.Close()

	runtime.GC()
	before := vmRSS(t)
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Size() != total || f.Len() != numTensors {
		t.Fatalf("Size %d Len %d", f.Size(), f.Len())
	}
	if !f.Mapped() {
		t.Fatal("file is not memory-mapped on linux")
	}
	var viewed int64
	for _, name := range f.Names() {
		b, err := f.Bytes(name)
		if err != nil {
			t.Fatal(err)
		}
		viewed += int64(len(b))
	}
	runtime.GC()
	after := vmRSS(t)
	t.Logf("2 GiB file: VmRSS %d MB before Open, %d MB after Open + Bytes views of %d MB (growth %d KB)",
		before>>20, after>>20, viewed>>20, (after-before)>>10)
	if viewed != numTensors*perTensor {
		t.Fatalf("views cover %d bytes, want %d", viewed, numTensors*perTensor)
	}
	if after-before > 50<<20 {
		t.Errorf("resident memory grew by %d MB on Open, want < 50 MB", (after-before)>>20)
	}

	// Touching a tensor pages in only what is read.
	b, _ := f.Bytes("model.layers.7.weight")
	var sum byte
	for i := 0; i < 1<<20; i += 4096 {
		sum += b[i]
	}
	touched := vmRSS(t)
	if sum != 0 || touched-before > 50<<20 {
		t.Errorf("reading 1 MiB of one tensor: sum %d, RSS growth %d MB", sum, (touched-before)>>20)
	}
}
