package safetensors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
)

// IndexFileName is the name of the index of a sharded Hugging Face checkpoint.
const IndexFileName = "model.safetensors.index.json"

// maxIndexSize bounds the size of an index file read into memory.
const maxIndexSize = 256 << 20

// Sharded is one name→tensor view over the shards of a checkpoint, built from
// a model.safetensors.index.json (or from the .safetensors files of a
// directory). Shards are opened on first use, reading only their header.
// A Sharded is safe for concurrent use; Close must not race with other calls.
type Sharded struct {
	dir       string
	indexPath string            // "" when not built from an index
	weightMap map[string]string // tensor name -> shard file (relative to dir)
	names     []string          // sorted
	shards    []string          // sorted, unique
	meta      map[string]string

	mu     sync.Mutex
	open   map[string]*File
	closed bool
}

var _ Reader = (*Sharded)(nil)

// OpenIndex opens the sharded checkpoint described by the index file at path
// ({"metadata": {...}, "weight_map": {"tensor": "shard.safetensors", ...}}).
// It validates the index and checks that every shard exists, but opens no shard.
func OpenIndex(path string) (*Sharded, error) {
	data, err := readLimited(path, maxIndexSize)
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	s, err := parseIndex(data, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", path, err)
	}
	s.indexPath = path
	for _, shard := range s.shards {
		st, err := os.Stat(filepath.Join(s.dir, shard))
		if err == nil && st.IsDir() {
			err = errors.New("is a directory")
		}
		if err != nil {
			return nil, fmt.Errorf("%w: index %s: shard %q: %w", ErrIndex, path, shard, err)
		}
	}
	return s, nil
}

func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s is a directory", path)
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%w: %s is %d bytes, more than the %d-byte limit", ErrIndex, path, st.Size(), limit)
	}
	return os.ReadFile(path)
}

// parseIndex validates an index document; shard paths are relative to dir.
func parseIndex(data []byte, dir string) (*Sharded, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := expectObject(dec); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrIndex, err)
	}
	s := &Sharded{dir: dir, open: make(map[string]*File)}
	sawMap := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: not valid JSON: %v", ErrIndex, err)
		}
		key, _ := tok.(string)
		switch key {
		case "weight_map":
			if sawMap {
				return nil, fmt.Errorf("%w: weight_map appears twice", ErrIndex)
			}
			sawMap = true
			if s.weightMap, err = decodeWeightMap(dec); err != nil {
				return nil, err
			}
		case "metadata":
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				return nil, fmt.Errorf("%w: metadata: %s", ErrIndex, cleanJSONError(err))
			}
			if m != nil {
				s.meta = make(map[string]string, len(m))
				for k, v := range m {
					if str, ok := v.(string); ok {
						s.meta[k] = str
					} else {
						b, _ := json.Marshal(v) // numbers such as total_size keep their JSON text
						s.meta[k] = string(b)
					}
				}
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, fmt.Errorf("%w: %q: %s", ErrIndex, key, cleanJSONError(err))
			}
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("%w: not valid JSON: %v", ErrIndex, err)
	}
	if rest := data[dec.InputOffset():]; len(bytes.TrimSpace(rest)) != 0 {
		return nil, fmt.Errorf("%w: trailing characters after the JSON object", ErrIndex)
	}
	if !sawMap {
		return nil, fmt.Errorf("%w: missing \"weight_map\"", ErrIndex)
	}
	s.finish()
	return s, nil
}

func expectObject(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("not valid JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return errors.New("not a JSON object")
	}
	return nil
}

func decodeWeightMap(dec *json.Decoder) (map[string]string, error) {
	if err := expectObject(dec); err != nil {
		return nil, fmt.Errorf("%w: weight_map: %v", ErrIndex, err)
	}
	m := make(map[string]string)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: weight_map: not valid JSON: %v", ErrIndex, err)
		}
		name, _ := tok.(string)
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%w: weight_map[%q]: %s", ErrIndex, name, cleanJSONError(err))
		}
		shard, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("%w: weight_map[%q] is %s, not a file name", ErrIndex, name, jsonKind(v))
		}
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("%w: tensor %q appears twice in weight_map", ErrDuplicate, name)
		}
		if shard == "" || !filepath.IsLocal(shard) || strings.ContainsRune(shard, '\\') {
			return nil, fmt.Errorf("%w: weight_map[%q] = %q is not a relative path inside the model directory", ErrIndex, name, shard)
		}
		m[name] = shard
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("%w: weight_map: not valid JSON: %v", ErrIndex, err)
	}
	return m, nil
}

func (s *Sharded) finish() {
	s.names = slices.Sorted(maps.Keys(s.weightMap))
	set := make(map[string]bool)
	for _, f := range s.weightMap {
		set[f] = true
	}
	s.shards = slices.Sorted(maps.Keys(set))
}

// OpenDir opens the safetensors weights of a model directory: through
// model.safetensors.index.json when present, else model.safetensors, else
// the only *.safetensors.index.json, else every *.safetensors file in the
// directory (whose headers are then read now, to build the name map; a name
// present in two files is an error).
func OpenDir(dir string) (*Sharded, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("safetensors: %s is not a directory", dir)
	}
	if p := filepath.Join(dir, IndexFileName); fileExists(p) {
		return OpenIndex(p)
	}
	if p := filepath.Join(dir, "model.safetensors"); fileExists(p) {
		return openFiles(dir, []string{"model.safetensors"})
	}
	indexes, _ := filepath.Glob(filepath.Join(dir, "*.safetensors.index.json"))
	if len(indexes) == 1 {
		return OpenIndex(indexes[0])
	}
	if len(indexes) > 1 {
		return nil, fmt.Errorf("safetensors: %s holds %d index files and no %s; open one with OpenIndex", dir, len(indexes), IndexFileName)
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	var files []string
	for _, p := range paths {
		if fileExists(p) {
			files = append(files, filepath.Base(p))
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("safetensors: no .safetensors files in %s: %w", dir, fs.ErrNotExist)
	}
	return openFiles(dir, files)
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// openFiles builds a view over the given files of dir, opening each one.
func openFiles(dir string, files []string) (*Sharded, error) {
	s := &Sharded{dir: dir, weightMap: make(map[string]string), open: make(map[string]*File)}
	for _, name := range files {
		f, err := Open(filepath.Join(dir, name))
		if err != nil {
			s.Close()
			return nil, err
		}
		s.open[name] = f
		for _, t := range f.hdr.tensors {
			if prev, dup := s.weightMap[t.Name]; dup {
				s.Close()
				return nil, fmt.Errorf("%w: tensor %q is in both %s and %s", ErrDuplicate, t.Name, prev, name)
			}
			s.weightMap[t.Name] = name
		}
		if len(files) == 1 {
			s.meta = f.Metadata()
		}
	}
	s.finish()
	return s, nil
}

// OpenPath opens path as a single .safetensors file, an index JSON file, or a
// model directory (see OpenDir), deciding by what path is.
func OpenPath(path string) (Reader, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	switch {
	case st.IsDir():
		return OpenDir(path)
	case strings.HasSuffix(path, ".json"):
		return OpenIndex(path)
	}
	return Open(path)
}

// Dir returns the directory the shard paths are relative to.
func (s *Sharded) Dir() string { return s.dir }

// IndexPath returns the path of the index file, or "" when the view was built
// from the directory's .safetensors files.
func (s *Sharded) IndexPath() string { return s.indexPath }

// Names returns every tensor name, sorted.
func (s *Sharded) Names() []string { return slices.Clone(s.names) }

// Len returns the number of tensors.
func (s *Sharded) Len() int { return len(s.names) }

// Shards returns the shard file names (relative to Dir), sorted.
func (s *Sharded) Shards() []string { return slices.Clone(s.shards) }

// ShardOf returns the shard file holding the named tensor, per the index.
func (s *Sharded) ShardOf(name string) (string, bool) {
	f, ok := s.weightMap[name]
	return f, ok
}

// Metadata returns a copy of the index's metadata (for a single file, its
// header's __metadata__). Non-string index values such as total_size are
// given as their JSON text.
func (s *Sharded) Metadata() map[string]string { return maps.Clone(s.meta) }

// Shard returns the named shard file, opening it (header only) on first use.
func (s *Sharded) Shard(file string) (*File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if f, ok := s.open[file]; ok {
		return f, nil
	}
	if _, known := slices.BinarySearch(s.shards, file); !known {
		return nil, fmt.Errorf("%w: %q is not a shard of %s", ErrNotFound, file, s.dir)
	}
	f, err := Open(filepath.Join(s.dir, file))
	if err != nil {
		return nil, err // names the shard's path
	}
	s.open[file] = f
	return f, nil
}

// shardFor resolves name to its open shard.
func (s *Sharded) shardFor(name string) (*File, error) {
	file, ok := s.weightMap[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q in %s", ErrNotFound, name, s.dir)
	}
	f, err := s.Shard(file)
	if err != nil {
		return nil, err
	}
	if !f.Has(name) {
		return nil, fmt.Errorf("%w: weight_map puts tensor %q in %s, which does not hold it", ErrIndex, name, file)
	}
	return f, nil
}

// Info returns the description of the named tensor (opening its shard if
// needed); TensorInfo.File is the shard's path relative to Dir, as in the index.
func (s *Sharded) Info(name string) (TensorInfo, error) {
	f, err := s.shardFor(name)
	if err != nil {
		return TensorInfo{}, err
	}
	info, err := f.Info(name)
	info.File = s.weightMap[name] // the shard path as the index gives it
	return info, err
}

// Bytes returns the named tensor's data as (*File).Bytes does.
func (s *Sharded) Bytes(name string) ([]byte, error) {
	f, err := s.shardFor(name)
	if err != nil {
		return nil, err
	}
	return f.Bytes(name)
}

// Release releases the named tensor's pages in its shard, as
// (*File).Release does; an unknown name does nothing.
func (s *Sharded) Release(name string) {
	if f, err := s.shardFor(name); err == nil {
		f.Release(name)
	}
}

// Verify opens every shard and checks that each tensor of the weight map is
// present in its shard. Tensors in a shard but absent from the weight map are
// returned (sorted) as extra; Hugging Face loaders ignore them.
func (s *Sharded) Verify() (extra []string, err error) {
	for _, file := range s.shards {
		f, err := s.Shard(file)
		if err != nil {
			return nil, err
		}
		for _, t := range f.hdr.tensors {
			if s.weightMap[t.Name] != file {
				extra = append(extra, t.Name)
			}
		}
	}
	var missing []string
	for _, name := range s.names {
		f, err := s.Shard(s.weightMap[name])
		if err != nil {
			return nil, err
		}
		if !f.Has(name) {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: %d tensors of the weight map are missing from their shards (first: %q in %s)",
			ErrIndex, len(missing), missing[0], s.weightMap[missing[0]])
	}
	sort.Strings(extra)
	return extra, nil
}

// Close closes every opened shard. It is safe to call more than once.
func (s *Sharded) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for _, f := range s.open {
		if err := f.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	s.open = nil
	return errors.Join(errs...)
}
