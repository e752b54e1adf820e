package safetensors

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestOpenIndexReference(t *testing.T) {
	s, err := OpenIndex("testdata/ref/sharded/model.safetensors.index.json")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := len(s.open); n != 0 {
		t.Fatalf("OpenIndex opened %d shards, want none (lazy)", n)
	}
	wantNames := []string{"lm_head.weight", "model.embed_tokens.weight", "model.layers.0.mlp.up_proj.weight", "model.norm.weight"}
	if !reflect.DeepEqual(s.Names(), wantNames) {
		t.Errorf("Names = %v", s.Names())
	}
	if got := s.Shards(); !reflect.DeepEqual(got, []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}) {
		t.Errorf("Shards = %v", got)
	}
	if got := s.Metadata()["total_size"]; got != "48" {
		t.Errorf("total_size = %q, want 48", got)
	}
	info, err := s.Info("model.norm.weight")
	if err != nil {
		t.Fatal(err)
	}
	if info.File != "model-00002-of-00002.safetensors" || info.DType != F32 || !reflect.DeepEqual(info.Shape, []int{2}) {
		t.Errorf("Info = %+v", info)
	}
	if n := len(s.open); n != 1 {
		t.Errorf("after one Info, %d shards open, want 1", n)
	}
	data, err := s.Bytes("model.norm.weight")
	if err != nil || !bytes.Equal(data, f32bytes(1, 2)) {
		t.Errorf("Bytes = %v, %v", data, err)
	}
	if _, err := s.Info("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Info(nope) = %v, want ErrNotFound", err)
	}
	extra, err := s.Verify()
	if err != nil || len(extra) != 0 {
		t.Errorf("Verify = %v, %v", extra, err)
	}
	var total int64
	for _, name := range s.Names() {
		info, err := s.Info(name)
		if err != nil {
			t.Fatal(err)
		}
		total += info.NumBytes()
	}
	if total != 48 {
		t.Errorf("sum of tensor sizes = %d, want total_size 48", total)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Bytes("model.norm.weight"); !errors.Is(err, ErrClosed) {
		t.Errorf("Bytes after Close = %v, want ErrClosed", err)
	}
	// OpenDir and OpenPath find the same index.
	for _, open := range []func() (Reader, error){
		func() (Reader, error) { return OpenDir("testdata/ref/sharded") },
		func() (Reader, error) { return OpenPath("testdata/ref/sharded") },
		func() (Reader, error) { return OpenPath("testdata/ref/sharded/model.safetensors.index.json") },
	} {
		r, err := open()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(r.Names(), wantNames) {
			t.Errorf("Names = %v", r.Names())
		}
		r.Close()
	}
}

func writeShard(t *testing.T, dir, name string, tensors ...Tensor) {
	t.Helper()
	if err := Write(filepath.Join(dir, name), tensors, nil); err != nil {
		t.Fatal(err)
	}
}

func u8t(name string, vals ...byte) Tensor {
	return Tensor{Name: name, DType: U8, Shape: []int{len(vals)}, Data: vals}
}

func TestOpenIndexInvalid(t *testing.T) {
	tests := []struct {
		name    string
		index   string
		want    error
		mention string
	}{
		{"not json", `{"weight_map":`, ErrIndex, "not valid JSON"},
		{"not object", `[]`, ErrIndex, "not a JSON object"},
		{"no weight map", `{"metadata":{}}`, ErrIndex, `missing "weight_map"`},
		{"weight map not object", `{"weight_map":[1]}`, ErrIndex, "weight_map"},
		{"shard not string", `{"weight_map":{"a":1}}`, ErrIndex, `weight_map["a"] is a number`},
		{"absolute shard", `{"weight_map":{"a":"/etc/passwd"}}`, ErrIndex, "not a relative path"},
		{"escaping shard", `{"weight_map":{"a":"../a.safetensors"}}`, ErrIndex, "not a relative path"},
		{"empty shard", `{"weight_map":{"a":""}}`, ErrIndex, "not a relative path"},
		{"duplicate tensor", `{"weight_map":{"a":"a.safetensors","a":"a.safetensors"}}`, ErrDuplicate, `"a"`},
		{"missing shard", `{"weight_map":{"a":"missing.safetensors"}}`, fs.ErrNotExist, `shard "missing.safetensors"`},
		{"trailing", `{"weight_map":{}} x`, ErrIndex, "trailing"},
		{"metadata not object", `{"metadata":3,"weight_map":{}}`, ErrIndex, "metadata"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeShard(t, dir, "a.safetensors", u8t("a", 1))
			path := filepath.Join(dir, IndexFileName)
			os.WriteFile(path, []byte(tc.index), 0o644)
			_, err := OpenIndex(path)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("OpenIndex error = %v, want %v mentioning %q", err, tc.want, tc.mention)
			}
		})
	}
}

func TestShardedInconsistent(t *testing.T) {
	dir := t.TempDir()
	writeShard(t, dir, "s1.safetensors", u8t("a", 1), u8t("extra", 9))
	writeShard(t, dir, "s2.safetensors", u8t("b", 2))
	index := `{"metadata":{"total_size":2,"note":"x"},"weight_map":{"a":"s1.safetensors","b":"s1.safetensors"}}`
	os.WriteFile(filepath.Join(dir, IndexFileName), []byte(index), 0o644)
	s, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, _ := s.Bytes("a"); !bytes.Equal(got, []byte{1}) {
		t.Errorf("Bytes(a) = %v", got)
	}
	if _, err := s.Bytes("b"); !errors.Is(err, ErrIndex) || !strings.Contains(err.Error(), `"b"`) {
		t.Errorf("Bytes(b) = %v, want ErrIndex naming b", err)
	}
	if _, err := s.Verify(); !errors.Is(err, ErrIndex) {
		t.Errorf("Verify = %v, want ErrIndex", err)
	}
	if m := s.Metadata(); m["note"] != "x" || m["total_size"] != "2" {
		t.Errorf("Metadata = %v", m)
	}
	if _, err := s.Shard("other.safetensors"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Shard(other) = %v, want ErrNotFound", err)
	}
}

func TestOpenDirWithoutIndex(t *testing.T) {
	t.Run("single model.safetensors", func(t *testing.T) {
		dir := t.TempDir()
		if err := Write(filepath.Join(dir, "model.safetensors"), []Tensor{u8t("w", 1, 2)}, map[string]string{"format": "pt"}); err != nil {
			t.Fatal(err)
		}
		writeShard(t, dir, "other.safetensors", u8t("ignored", 1))
		s, err := OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if !reflect.DeepEqual(s.Names(), []string{"w"}) || s.Metadata()["format"] != "pt" || s.IndexPath() != "" {
			t.Errorf("Names %v Metadata %v", s.Names(), s.Metadata())
		}
		info, _ := s.Info("w")
		if info.File != "model.safetensors" {
			t.Errorf("File = %q", info.File)
		}
	})
	t.Run("several files", func(t *testing.T) {
		dir := t.TempDir()
		writeShard(t, dir, "a.safetensors", u8t("x", 1))
		writeShard(t, dir, "b.safetensors", u8t("y", 2), u8t("z", 3))
		s, err := OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if !reflect.DeepEqual(s.Names(), []string{"x", "y", "z"}) {
			t.Errorf("Names = %v", s.Names())
		}
		if f, _ := s.ShardOf("z"); f != "b.safetensors" {
			t.Errorf("ShardOf(z) = %q", f)
		}
	})
	t.Run("duplicate across files", func(t *testing.T) {
		dir := t.TempDir()
		writeShard(t, dir, "a.safetensors", u8t("x", 1))
		writeShard(t, dir, "b.safetensors", u8t("x", 2))
		if _, err := OpenDir(dir); !errors.Is(err, ErrDuplicate) {
			t.Errorf("OpenDir = %v, want ErrDuplicate", err)
		}
	})
	t.Run("invalid file", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "model.safetensors"), []byte("garbage!garbage"), 0o644)
		if _, err := OpenDir(dir); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "model.safetensors") {
			t.Errorf("OpenDir = %v, want a format error naming the file", err)
		}
	})
	t.Run("empty dir", func(t *testing.T) {
		if _, err := OpenDir(t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("OpenDir = %v, want fs.ErrNotExist", err)
		}
	})
	t.Run("not a dir", func(t *testing.T) {
		if _, err := OpenDir("testdata/ref/all_dtypes.safetensors"); err == nil {
			t.Error("OpenDir on a file succeeded")
		}
	})
}

func TestShardInSubdirectory(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "weights"), 0o755)
	writeShard(t, dir, "weights/part.safetensors", u8t("a", 5))
	os.WriteFile(filepath.Join(dir, IndexFileName), []byte(`{"weight_map":{"a":"weights/part.safetensors"}}`), 0o644)
	s, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	info, err := s.Info("a")
	if err != nil || info.File != "weights/part.safetensors" {
		t.Fatalf("Info = %+v, %v", info, err)
	}
	if b, _ := s.Bytes("a"); !bytes.Equal(b, []byte{5}) {
		t.Errorf("Bytes = %v", b)
	}
}
