package dist

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gotpu/gotpu/checkpoint"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/hf/safetensors"
	"github.com/gotpu/gotpu/internal/atomicfile"
	"github.com/gotpu/gotpu/optim"
	"github.com/gotpu/gotpu/tensor"
)

// Sharded checkpoints. A checkpoint directory holds one safetensors file
// per rank that wrote it and the index FSDPIndexFile (JSON, FSDPIndex):
//
//	fsdp-index.json
//	fsdp-g<generation>-rank<r>-of-<world>.safetensors
//
// Rank r's file holds, for each unit i, "unit.<i>": its shard (elements
// [r·S, (r+1)·S) of the unit's flat parameters, S = shard_len, zero
// padding past numel), and "optim.<i>.<name>": the optimizer's state of
// that shard (state of the shard's length is sharded the same way; other
// state, such as a step count tensor, is the same in every file). Every
// file is written atomically; the index is written (atomically) by rank 0
// after every rank's file is complete, and names the generation's files,
// so a crash while saving leaves the previous checkpoint readable.
// Loading reads the index and, for each rank of the current world, the
// parts of the files that cover its new shard: any world size loads a
// checkpoint of any other.

// FSDPIndexFile is the index's file name in a sharded checkpoint directory.
const FSDPIndexFile = "fsdp-index.json"

// FSDPIndexFormat is FSDPIndex.Format.
const FSDPIndexFormat = "gotpu-fsdp-v1"

// FSDPIndex is the JSON index of a sharded checkpoint.
type FSDPIndex struct {
	Format     string `json:"format"`
	WorldSize  int    `json:"world_size"`
	Generation int    `json:"generation"`
	// Files are the shard files, by rank, relative to the directory.
	Files []string    `json:"files"`
	Units []IndexUnit `json:"units"`
	// Optim is the optimizer's hyper-parameters and step counts
	// (optim.Optimizer.StateDict's meta; the same on every rank);
	// ShardedState names the state tensors ("<unit>.<name>") that are
	// sharded like the parameters.
	Optim        string   `json:"optim,omitempty"`
	ShardedState []string `json:"sharded_state,omitempty"`
	// Meta is the caller's metadata (step, RNG state, ...).
	Meta map[string]string `json:"meta,omitempty"`
}

// IndexUnit describes one unit in an FSDPIndex.
type IndexUnit struct {
	Name     string       `json:"name"`
	DType    string       `json:"dtype"`
	Numel    int          `json:"numel"`
	ShardLen int          `json:"shard_len"`
	Params   []IndexParam `json:"params"`
}

// IndexParam is one parameter of a unit: its state-dict name, full shape
// and offset (in elements) in the unit's flat vector.
type IndexParam struct {
	Name   string `json:"name"`
	Shape  []int  `json:"shape"`
	Offset int    `json:"offset"`
}

// ReadFSDPIndex reads the index of the sharded checkpoint in dir; the error
// wraps os.ErrNotExist when there is none.
func ReadFSDPIndex(dir string) (*FSDPIndex, error) {
	raw, err := os.ReadFile(filepath.Join(dir, FSDPIndexFile))
	if err != nil {
		return nil, fmt.Errorf("dist: fsdp checkpoint: %w", err)
	}
	var ix FSDPIndex
	if err := json.Unmarshal(raw, &ix); err != nil {
		return nil, fmt.Errorf("dist: fsdp checkpoint: %s: %w: %w", filepath.Join(dir, FSDPIndexFile), checkpoint.ErrCorrupt, err)
	}
	if ix.Format != FSDPIndexFormat || ix.WorldSize < 1 || len(ix.Files) != ix.WorldSize {
		return nil, fmt.Errorf("dist: fsdp checkpoint: %s: %w: format %q, world size %d, %d files", filepath.Join(dir, FSDPIndexFile), checkpoint.ErrCorrupt, ix.Format, ix.WorldSize, len(ix.Files))
	}
	return &ix, nil
}

func (f *FSDP) index() *FSDPIndex {
	ix := &FSDPIndex{Format: FSDPIndexFormat, WorldSize: f.g.Size()}
	for _, u := range f.units {
		iu := IndexUnit{Name: u.name, DType: u.dt.String(), Numel: u.numel, ShardLen: u.shardLen}
		for i, p := range u.params {
			iu.Params = append(iu.Params, IndexParam{Name: u.names[i], Shape: p.Shape(), Offset: u.offs[i]})
		}
		ix.Units = append(ix.Units, iu)
	}
	return ix
}

// checkOptimizer makes sure opt steps exactly f's shards, in order (its
// state keys are then the unit indices).
func (f *FSDP) checkOptimizer(opt optim.Optimizer) error {
	var ps []*tensor.Tensor
	for _, g := range opt.Groups() {
		ps = append(ps, g.Params...)
	}
	if !slices.Equal(ps, f.Parameters()) {
		return errors.New("dist: fsdp checkpoint: the optimizer must be built over FSDP.Parameters() (every shard, in order)")
	}
	return nil
}

// SaveCheckpoint writes a sharded checkpoint into dir: this rank's shards
// and the state opt (nil: none) keeps for them, and, once every rank's
// file is written, the index with meta. Every rank must call it.
func (f *FSDP) SaveCheckpoint(ctx context.Context, dir string, opt optim.Optimizer, meta map[string]string) error {
	if opt != nil {
		if err := f.checkOptimizer(opt); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("dist: fsdp checkpoint: %w", err)
	}
	ix := f.index()
	ix.Meta = meta
	if prev, err := ReadFSDPIndex(dir); err == nil {
		ix.Generation = prev.Generation + 1
	}
	N := f.g.Size()
	for r := range N {
		ix.Files = append(ix.Files, fmt.Sprintf("fsdp-g%d-rank%05d-of-%05d.safetensors", ix.Generation, r, N))
	}
	var named []checkpoint.Named
	for i, u := range f.units {
		named = append(named, checkpoint.Named{Name: "unit." + strconv.Itoa(i), Tensor: u.shard.Detach()})
	}
	if opt != nil {
		st, om := opt.StateDict()
		ix.Optim = om
		keys := make([]string, 0, len(st))
		for k := range st {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			t := st[k]
			idx, _, _ := strings.Cut(k, ".")
			ui, err := strconv.Atoi(idx)
			if err != nil || ui < 0 || ui >= len(f.units) {
				return fmt.Errorf("dist: fsdp checkpoint: unexpected optimizer state key %q", k)
			}
			if t.Dim() == 1 && t.Numel() == f.units[ui].shardLen {
				ix.ShardedState = append(ix.ShardedState, k)
			}
			named = append(named, checkpoint.Named{Name: checkpoint.OptimPrefix + k, Tensor: t})
		}
	}
	path := filepath.Join(dir, ix.Files[f.g.Rank()])
	if err := checkpoint.Save(path, named, map[string]string{"fsdp_rank": strconv.Itoa(f.g.Rank()), "fsdp_world_size": strconv.Itoa(N)}); err != nil {
		return fmt.Errorf("dist: fsdp checkpoint: %w", err)
	}
	// The index goes in only once every rank's file is complete.
	if err := f.g.Barrier(ctx); err != nil {
		return fmt.Errorf("dist: fsdp checkpoint: waiting for the other ranks' files: %w", err)
	}
	var werr error
	if f.g.Rank() == 0 {
		werr = writeIndex(dir, ix)
	}
	// Nobody starts another save (which reads the index) before it is in.
	if err := f.g.Barrier(ctx); err != nil {
		return fmt.Errorf("dist: fsdp checkpoint: waiting for the index: %w", err)
	}
	return werr
}

// writeIndex writes ix atomically and removes other generations' files.
func writeIndex(dir string, ix *FSDPIndex) error {
	js, err := json.MarshalIndent(ix, "", "  ")
	if err != nil {
		return fmt.Errorf("dist: fsdp checkpoint: %w", err)
	}
	if _, err := atomicfile.Write(filepath.Join(dir, FSDPIndexFile), 0o644, func(w io.Writer) error {
		_, err := w.Write(append(js, '\n'))
		return err
	}); err != nil {
		return fmt.Errorf("dist: fsdp checkpoint: writing the index: %w", err)
	}
	old, _ := filepath.Glob(filepath.Join(dir, "fsdp-g*-rank*-of-*.safetensors"))
	for _, p := range old {
		if !slices.Contains(ix.Files, filepath.Base(p)) {
			os.Remove(p)
		}
	}
	return nil
}

// LoadCheckpoint loads the sharded checkpoint in dir, written by any world
// size, into this rank's shards and opt's state (nil: parameters only),
// resharding to the current world, and returns the metadata saved with
// it. The units must be the ones that wrote it (names, shapes, dtypes).
// Every rank may call it independently (no collective).
func (f *FSDP) LoadCheckpoint(ctx context.Context, dir string, opt optim.Optimizer) (map[string]string, error) {
	ix, err := ReadFSDPIndex(dir)
	if err != nil {
		return nil, err
	}
	if opt != nil {
		if err := f.checkOptimizer(opt); err != nil {
			return nil, err
		}
	}
	mine := f.index()
	if len(ix.Units) != len(mine.Units) {
		return nil, fmt.Errorf("dist: fsdp checkpoint: %s has %d units, this model %d", dir, len(ix.Units), len(mine.Units))
	}
	for i, u := range ix.Units {
		m := mine.Units[i]
		if u.Name != m.Name || u.DType != m.DType || u.Numel != m.Numel || len(u.Params) != len(m.Params) {
			return nil, fmt.Errorf("dist: fsdp checkpoint: %s: unit %d is %q (%s, %d elements), this model's %q (%s, %d elements)", dir, i, u.Name, u.DType, u.Numel, m.Name, m.DType, m.Numel)
		}
		for j, p := range u.Params {
			q := m.Params[j]
			if p.Name != q.Name || !slices.Equal(p.Shape, q.Shape) || p.Offset != q.Offset {
				return nil, fmt.Errorf("dist: fsdp checkpoint: %s: unit %q parameter %d is %s %v, this model's %s %v", dir, u.Name, j, p.Name, p.Shape, q.Name, q.Shape)
			}
		}
	}
	rd := &shardReader{dir: dir, ix: ix, files: map[int]*safetensors.File{}}
	defer rd.close()
	for i, u := range f.units {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		raw, err := rd.reshard(i, "unit."+strconv.Itoa(i), u, ix.Units[i].ShardLen, f.g.Rank())
		if err != nil {
			return nil, err
		}
		if err := tensor.Catch(func() {
			if !u.shard.WithHostBytes(true, func(dst []byte) { copy(dst, raw) }) {
				tensor.NoGrad(func() { u.shard.CopyFrom(tensor.FromBytes(u.shard.Device(), u.dt, []int{u.shardLen}, raw)) })
			}
		}); err != nil {
			return nil, fmt.Errorf("dist: fsdp checkpoint: unit %q: %w", u.name, err)
		}
	}
	if opt == nil {
		return ix.Meta, nil
	}
	if ix.Optim == "" {
		return nil, fmt.Errorf("dist: fsdp checkpoint: %s holds no optimizer state", dir)
	}
	first, err := rd.file(0)
	if err != nil {
		return nil, err
	}
	state := map[string]*tensor.Tensor{}
	for _, info := range first.Tensors() {
		key, ok := strings.CutPrefix(info.Name, checkpoint.OptimPrefix)
		if !ok {
			continue
		}
		idx, _, _ := strings.Cut(key, ".")
		ui, err := strconv.Atoi(idx)
		if err != nil || ui < 0 || ui >= len(f.units) {
			return nil, fmt.Errorf("dist: fsdp checkpoint: %s: unexpected optimizer state %q", dir, info.Name)
		}
		u := f.units[ui]
		dt, err := stDType(info.DType)
		if err != nil {
			return nil, fmt.Errorf("dist: fsdp checkpoint: %s: %s: %w", dir, info.Name, err)
		}
		var t *tensor.Tensor
		if slices.Contains(ix.ShardedState, key) {
			if dt != u.dt {
				return nil, fmt.Errorf("dist: fsdp checkpoint: %s: sharded state %s is %s, its unit %s", dir, key, dt, u.dt)
			}
			raw, err := rd.reshard(ui, info.Name, u, ix.Units[ui].ShardLen, f.g.Rank())
			if err != nil {
				return nil, err
			}
			err = tensor.Catch(func() { t = tensor.FromBytes(u.shard.Device(), dt, []int{u.shardLen}, raw) })
			if err != nil {
				return nil, fmt.Errorf("dist: fsdp checkpoint: %s: %w", info.Name, err)
			}
		} else {
			raw, err := first.Bytes(info.Name)
			if err != nil {
				return nil, fmt.Errorf("dist: fsdp checkpoint: %s: %w: %w", info.Name, checkpoint.ErrCorrupt, err)
			}
			if err := tensor.Catch(func() { t = tensor.FromBytes(u.shard.Device(), dt, info.Shape, raw) }); err != nil {
				return nil, fmt.Errorf("dist: fsdp checkpoint: %s: %w", info.Name, err)
			}
		}
		state[key] = t
	}
	if err := opt.LoadStateDict(state, ix.Optim); err != nil {
		return nil, fmt.Errorf("dist: fsdp checkpoint: %s: %w", dir, err)
	}
	return ix.Meta, nil
}

// stDType maps a safetensors dtype name to gotpu's.
func stDType(s safetensors.DType) (dtype.DType, error) {
	names := map[string]dtype.DType{"F32": dtype.F32, "F64": dtype.F64, "F16": dtype.F16, "BF16": dtype.BF16,
		"I64": dtype.I64, "I32": dtype.I32, "I16": dtype.I16, "I8": dtype.I8, "U8": dtype.U8, "BOOL": dtype.Bool}
	if d, ok := names[s.String()]; ok {
		return d, nil
	}
	return dtype.Invalid, fmt.Errorf("dtype %s has no gotpu equivalent", s)
}

// shardReader reads ranges of the flat vectors a checkpoint's files hold.
type shardReader struct {
	dir   string
	ix    *FSDPIndex
	files map[int]*safetensors.File
}

func (rd *shardReader) file(r int) (*safetensors.File, error) {
	if f, ok := rd.files[r]; ok {
		return f, nil
	}
	path := filepath.Join(rd.dir, rd.ix.Files[r])
	f, err := safetensors.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("dist: fsdp checkpoint: %w", err)
		}
		return nil, fmt.Errorf("dist: fsdp checkpoint: %s: %w: %w", path, checkpoint.ErrCorrupt, err)
	}
	rd.files[r] = f
	return f, nil
}

func (rd *shardReader) close() {
	for _, f := range rd.files {
		f.Close()
	}
}

// reshard returns the bytes of rank's new shard (u.shardLen elements) of
// the flat vector stored under name, assembled from the old shards (of
// oldLen elements each, one per old rank) that overlap it; elements past
// the unit's numel are zero padding.
func (rd *shardReader) reshard(ui int, name string, u *Unit, oldLen, rank int) ([]byte, error) {
	es := u.dt.Size()
	out := make([]byte, u.shardLen*es)
	lo := rank * u.shardLen
	hi := min(lo+u.shardLen, u.numel) // real elements only: the rest stays zero
	for r := range rd.ix.WorldSize {
		olo, ohi := r*oldLen, min((r+1)*oldLen, u.numel)
		a, b := max(lo, olo), min(hi, ohi)
		if a >= b {
			continue
		}
		f, err := rd.file(r)
		if err != nil {
			return nil, err
		}
		raw, err := f.Bytes(name)
		if err != nil {
			return nil, fmt.Errorf("dist: fsdp checkpoint: %s: %s: %w: %w", rd.ix.Files[r], name, checkpoint.ErrCorrupt, err)
		}
		if len(raw) != oldLen*es {
			return nil, fmt.Errorf("dist: fsdp checkpoint: %s: %s has %d bytes, want %d (unit %d)", rd.ix.Files[r], name, len(raw), oldLen*es, ui)
		}
		copy(out[(a-lo)*es:(b-lo)*es], raw[(a-olo)*es:(b-olo)*es])
	}
	return out, nil
}
