package cpu

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Per-CPU cache blocking of the register-tiled GEMM. The data caches'
// sizes are read once at start (Linux: /sys/devices/system/cpu/cpu0/cache;
// elsewhere, or when that is unreadable, fixed defaults of a common x86
// core), and every level's tile derives its kc, mc and nc from them
// (gemmBlockFor): kc is L1d/128 (the k extent at which a B micro-panel one
// cache line wide, 16 f32 or 8 f64, fills half of L1d; L1d/192 for the f32
// tiles 64 wide), the A block
// (mc x kc) fills a quarter of L2 and each of the two packed B blocks
// (kc x nc) an eighth of L3.
//
// The rules are measurements (BenchmarkBlockSweep, BenchmarkBlockSweep512: one
// thread, thread CPU time, rounds interleaved, medians). Zen 3 (L1d 32
// KiB, L2 512 KiB, L3 32 MiB), f32 1024^3 on the 6x16 YMM tile: kc 256 mc
// 144 best within a ±10% spread, a small nc measurably worse (nc 256: 49,
// 512: 54, 4080: 62 GFLOP/s). Zen 5 (family 26: L1d 48 KiB, L2 1 MiB, L3
// 32 MiB), f32 1536^3 on the 6x64 ZMM tile, GFLOP/s:
//
//	kc \ mc    L2/8   L2/4   L2/2
//	 96        186    202    191
//	128        193    193    201
//	192        185    184    193
//	256        200    209    207
//	384        206    213    205
//
// so kc grows with L1d but not with the tile's width: the wide ZMM panel
// (kc x 64 f32 = 96 KiB at kc 384) streams from L2, and a longer k block
// saves C tile loads and stores; a B micro-panel held in half of L1d
// (kc 96) was 5-10% slower. With two threads the wide tile wants a
// shorter k block: on a 2-core Sapphire Rapids VM (L1d 48 KiB, L2 2 MiB),
// f32 x·Wᵀ at 2 threads (GFLOP/s, kc 256 / 384): 128x1536x576 167-175 /
// 135-143, 128x576x576 167-173 / 138-151, 512x576x1536 259-272 / 205-221,
// 2048^3 294 / 291-303, 1024^3 290 / 299; one thread sees no difference
// (123 / 120, 146 / 149). So the f32 tiles 64 wide take kc = L1d/192 (256
// there) and the narrower ones keep L1d/128. GOTPU_GEMM_KC, GOTPU_GEMM_MC
// and GOTPU_GEMM_NC override the derived values for every tile (rounded to the tile's
// granularity), for measuring.

// CacheSizes are the data cache sizes, in bytes, the GEMM blocking is
// derived from: L1d and L2 of one core, L3 of the cache shared by the
// cores.
type CacheSizes struct {
	L1d, L2, L3 int
	// Source says where the sizes come from: "sysfs" or "default".
	Source string
}

// defaultCaches are the sizes assumed when the system does not say.
var defaultCaches = CacheSizes{L1d: 32 << 10, L2: 512 << 10, L3: 8 << 20, Source: "default"}

// gemmCaches is this machine's cache sizes.
var gemmCaches = detectCaches("/sys/devices/system/cpu/cpu0/cache")

// detectCaches reads the data and unified caches of levels 1 to 3 under
// dir (the sysfs cache directory of one CPU), keeping the default of any
// level it cannot read.
func detectCaches(dir string) CacheSizes {
	c := defaultCaches
	found := false
	idx, _ := filepath.Glob(filepath.Join(dir, "index*"))
	for _, d := range idx {
		level, err1 := readSysInt(filepath.Join(d, "level"))
		typ, err2 := os.ReadFile(filepath.Join(d, "type"))
		size, err3 := readSysInt(filepath.Join(d, "size"))
		if err1 != nil || err2 != nil || err3 != nil || size <= 0 {
			continue
		}
		if t := strings.TrimSpace(string(typ)); t != "Data" && t != "Unified" {
			continue
		}
		switch level {
		case 1:
			c.L1d = size
		case 2:
			c.L2 = size
		case 3:
			c.L3 = size
		default:
			continue
		}
		found = true
	}
	if found {
		c.Source = "sysfs"
	}
	return c
}

// readSysInt reads a sysfs value such as "48K", "1024K", "32M" or "3".
func readSysInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	mul := 1
	switch {
	case strings.HasSuffix(s, "K"):
		mul, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "M"):
		mul, s = 1<<20, s[:len(s)-1]
	case strings.HasSuffix(s, "G"):
		mul, s = 1<<30, s[:len(s)-1]
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, err
	}
	return v * mul, nil
}

// Fractions of each cache the blocking fills (see the file comment).
const (
	gemmL1Div = 128 // kc = L1d / 128
	// kc = L1d / 192 for the f32 tiles 64 wide (a 64 KiB B micro-panel
	// at L1d 48 KiB): see the file comment.
	gemmL1DivWide = 192
	gemmL2Frac    = 4 // A block: L2 / 4
	gemmL3Frac    = 8 // one packed B block (of two): L3 / 8
)

// gemmBlockFor returns the kc, mc and nc of an mr x nr tile of es-byte
// elements for caches c, overridden by env (a lookup such as
// os.LookupEnv) where GOTPU_GEMM_KC, GOTPU_GEMM_MC or GOTPU_GEMM_NC is a
// positive integer. kc is a multiple of 8 in [64, 1024], mc a multiple of
// mr in [mr, 1024], nc a multiple of nr in [nr, 8192]. nr and es enter mc
// and nc only.
func gemmBlockFor(c CacheSizes, mr, nr, es int, env func(string) (string, bool)) (kc, mc, nc int) {
	div := gemmL1Div
	if es == 4 && nr >= 64 {
		div = gemmL1DivWide
	}
	kc = clampInt(c.L1d/div/8*8, 64, 1024)
	if v := envInt(env, "GOTPU_GEMM_KC"); v > 0 {
		kc = max(1, v)
	}
	mc = clampInt(c.L2/gemmL2Frac/(kc*es)/mr*mr, mr, 1024/mr*mr)
	if v := envInt(env, "GOTPU_GEMM_MC"); v > 0 {
		mc = max(mr, v/mr*mr)
	}
	nc = clampInt(c.L3/gemmL3Frac/(kc*es)/nr*nr, nr, 8192/nr*nr)
	if v := envInt(env, "GOTPU_GEMM_NC"); v > 0 {
		nc = max(nr, v/nr*nr)
	}
	return kc, mc, nc
}

func clampInt(v, lo, hi int) int { return max(lo, min(v, hi)) }

// envInt returns the positive integer value of variable name, or 0.
func envInt(env func(string) (string, bool), name string) int {
	if env == nil {
		return 0
	}
	s, ok := env(name)
	if !ok {
		return 0
	}
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || v <= 0 {
		return 0
	}
	return v
}

// newGemmTile returns an mr x nr tile of kern with the blocking derived
// from this machine's caches.
func newGemmTile[T gemmNum](mr, nr int, kern func(kc int, a, b, c *T, ldc int, pf *T, load int)) *gemmTile[T] {
	var z T
	es := int(sizeofNum(z))
	kc, mc, nc := gemmBlockFor(gemmCaches, mr, nr, es, os.LookupEnv)
	return &gemmTile[T]{mr: mr, nr: nr, kc: kc, mc: mc, nc: nc, kern: kern}
}

func sizeofNum[T gemmNum](z T) uintptr {
	switch any(z).(type) {
	case float32:
		return 4
	default:
		return 8
	}
}

// GEMMBlock is the register tile and cache blocking of one register-tiled
// GEMM kernel.
type GEMMBlock struct {
	Level  string `json:"level"`  // the kernel level it runs at
	DType  string `json:"dtype"`  // "f32" or "f64"
	MR     int    `json:"mr"`     // tile rows
	NR     int    `json:"nr"`     // tile columns
	KC     int    `json:"kc"`     // k block (B micro-panel kc x nr in L1d)
	MC     int    `json:"mc"`     // row block (A block mc x kc in L2)
	NC     int    `json:"nc"`     // column block (packed B block kc x nc in L3)
	Active bool   `json:"active"` // whether the active level runs it
}

// GEMMBlocking returns the cache sizes the GEMM blocking was derived from
// and the blocking of each register-tiled kernel this build and CPU have
// (none on the pure-Go level).
func GEMMBlocking() (CacheSizes, []GEMMBlock) {
	var out []GEMMBlock
	add32 := func(level string, t *gemmTile[float32]) {
		if t != nil && levelRank(level) < len(SupportedLevels()) {
			out = append(out, GEMMBlock{level, "f32", t.mr, t.nr, t.kc, t.mc, t.nc, tileF32(procKS) == t})
		}
	}
	add64 := func(level string, t *gemmTile[float64]) {
		if t != nil && levelRank(level) < len(SupportedLevels()) {
			out = append(out, GEMMBlock{level, "f64", t.mr, t.nr, t.kc, t.mc, t.nc, tileF64(procKS) == t})
		}
	}
	add32(LevelAVX2, asmTileF32)
	add64(LevelAVX2, asmTileF64)
	add32(LevelAVX512, asm512TileF32)
	add64(LevelAVX512, asm512TileF64)
	return gemmCaches, out
}
