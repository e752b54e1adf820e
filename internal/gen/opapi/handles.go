package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"

	"github.com/gotpu/gotpu/op"
)

// The op handles: one exported *op.Def variable per op in package op
// (op.Add, op.Matmul, ...), so that code refers to an op by a Go name the
// compiler checks rather than by a string. The variables are created
// empty when package op's variables are initialised and filled in by
// op.Register, so they are valid from the first init function on.

// handlesFile is the generated file in package op.
const handlesFile = "handles_gen.go"

// handleName returns the Go name of op d's handle: its name in CamelCase,
// with "Op" appended when that is taken by another identifier of package
// op (op.View is the Kind, so the view op is op.ViewOp).
func handleName(name string, taken map[string]bool) string {
	s := camel(name)
	if taken[s] {
		s += "Op"
	}
	return s
}

func camel(name string) string {
	var b strings.Builder
	for _, p := range strings.Split(strings.TrimSuffix(name, "_"), "_") {
		if p != "" {
			b.WriteString(strings.ToUpper(p[:1]) + p[1:])
		}
	}
	if strings.HasSuffix(name, "_") {
		b.WriteString("InPlace") // copy_ is CopyInPlace
	}
	return b.String()
}

// opIdentifiers returns the top-level identifiers declared in package op's
// hand-written files.
func opIdentifiers(dir string) (map[string]bool, error) {
	fset := token.NewFileSet()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	taken := map[string]bool{}
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") || strings.HasSuffix(p, "_gen.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					taken[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						taken[s.Name.Name] = true
					case *ast.ValueSpec:
						for _, n := range s.Names {
							taken[n.Name] = true
						}
					}
				}
			}
		}
	}
	return taken, nil
}

// generateHandles returns op/handles_gen.go, reading the hand-written
// files of package op in opDir for the names that are taken.
func generateHandles(opDir string) ([]byte, error) {
	taken, err := opIdentifiers(opDir)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(header)
	b.WriteString("\npackage op\n\n")
	b.WriteString("// The handles of the registered ops, filled in by Register.\nvar (\n")
	seen := map[string]string{}
	for _, d := range op.All() {
		n := handleName(d.Name, taken)
		if other, dup := seen[n]; dup {
			return nil, fmt.Errorf("ops %s and %s both have the handle name %s", other, d.Name, n)
		}
		seen[n] = d.Name
		fmt.Fprintf(&b, "\t%s = handle(%q)\n", n, d.Name)
	}
	b.WriteString(")\n")
	return format.Source(b.Bytes())
}

// handleOf returns the Go expression for op name's handle as seen from
// package tensor.
func handleOf(name string, taken map[string]bool) string {
	return "op." + handleName(name, taken)
}
