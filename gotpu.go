// Package gotpu is the entry point of the gotpu runtime: importing it
// registers the built-in devices (cpu, meta) and gives the version.
//
//	dev := gotpu.MustDevice("cpu")
//	x := tensor.FromSlice(dev, []float32{1, 2, 3, 4}, 2, 2)
//	fmt.Println(x.Matmul(x))
//
// The tensor API lives in package tensor, the op table in package op, the
// device registry (the extension point for new backends) in package device.
package gotpu

import (
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/internal/version"

	// The built-in backends register themselves.
	_ "github.com/gotpu/gotpu/backend/cpu"
	_ "github.com/gotpu/gotpu/backend/meta"
)

// Version is the gotpu version; it is part of compile-cache keys.
const Version = version.Version

// Device parses a device name ("cpu", "meta", "tpu:0") and checks that it
// exists.
func Device(name string) (device.Device, error) {
	d, _, err := device.Get(name)
	return d, err
}

// MustDevice is Device for program set-up: it panics on an unknown device.
func MustDevice(name string) device.Device {
	d, err := Device(name)
	if err != nil {
		panic(err)
	}
	return d
}
