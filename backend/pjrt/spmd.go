//go:build pjrt

package pjrt

/*
#include <stdlib.h>
#include "capi_spmd.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"sync"
	"unsafe"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// ErrClosed is returned by a Client or Executable used after Close.
var ErrClosed = errors.New("pjrt: use after close")

// ClientOptions configure NewClient.
type ClientOptions struct {
	// Plugin is the device type whose plugin file is searched as Open
	// searches it ("xla" when empty); Path, when set, is the file itself.
	Plugin, Path string
	// Create are the plugin's client create options (PJRT_NamedValue):
	// values of type int, int64, []int64, string, bool or float32. XLA's
	// CPU plugin reads "cpu_device_count" (int64: the number of devices
	// of one process). Multi-process plugins take "node_id" and
	// "num_nodes" with KV; XLA's CPU plugin 0.0.1 ignores options it does
	// not know, those two included (it is single-process).
	Create map[string]any
	// KV is the store a multi-process client shares with the other
	// processes through the key-value callbacks (nil: none).
	KV KeyValueStore
}

// Client is a PJRT client of its own, apart from the device backends Open
// registers, for programs that run on several devices at once: replicated
// programs with collectives and SPMD-partitioned ones (Compile). Its
// methods are safe for concurrent use.
type Client struct {
	p  *Plugin
	kv uintptr

	mu     sync.Mutex
	closed bool
	byID   map[int]*C.PJRT_Device
}

// NewClient loads a plugin and creates a client with opts.Create. On
// XLA's CPU plugin, Create{"cpu_device_count": N} gives N devices in this
// process.
func NewClient(opts ClientOptions) (*Client, error) {
	name := opts.Plugin
	if name == "" {
		name = "xla"
	}
	paths := []string{opts.Path}
	if opts.Path == "" {
		c, err := Candidates(name)
		if err != nil {
			return nil, err
		}
		if s, ok := specFor(name); ok {
			c = append(c, s.libs...)
		}
		if len(c) == 0 {
			return nil, fmt.Errorf("%w: no %s plugin found (set ClientOptions.Path or GOTPU_PJRT_PLUGIN)", ErrPluginNotFound, name)
		}
		paths = c
	}
	keys := make([]string, 0, len(opts.Create))
	for k := range opts.Create {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var kv uintptr
	if opts.KV != nil {
		kv = registerKV(opts.KV)
	}
	create := func(api *C.PJRT_Api, out **C.PJRT_Client) *C.PJRT_Error {
		return createClient(api, keys, opts.Create, kv, out)
	}
	var errs []error
	for _, path := range paths {
		if err := checkCreateOptions(keys, opts.Create); err != nil {
			return nil, err
		}
		p, err := loadWith(name, path, create)
		if err == nil {
			if C.gp_has_spmd(p.api) == 0 {
				return nil, fmt.Errorf("%w: %s: the plugin lacks the buffer shape or executable device queries multi-device programs need", ErrPluginLoad, path)
			}
			c := &Client{p: p, kv: kv, byID: map[int]*C.PJRT_Device{}}
			for i, d := range p.devInfo {
				c.byID[d.ID] = p.devices[i]
			}
			return c, nil
		}
		errs = append(errs, err)
	}
	if kv != 0 {
		unregisterKV(kv)
	}
	return nil, fmt.Errorf("pjrt: new %s client: %w", name, errors.Join(errs...))
}

func checkCreateOptions(keys []string, vals map[string]any) error {
	for _, k := range keys {
		switch vals[k].(type) {
		case int, int64, []int64, string, bool, float32:
		default:
			return fmt.Errorf("pjrt: client create option %s: unsupported value type %T (int, int64, []int64, string, bool or float32)", k, vals[k])
		}
	}
	return nil
}

// createClient builds the PJRT_NamedValue list in C memory (it must not
// hold Go pointers) and creates the client.
func createClient(api *C.PJRT_Api, keys []string, vals map[string]any, kv uintptr, out **C.PJRT_Client) *C.PJRT_Error {
	nv := C.gp_nv_alloc(C.size_t(len(keys)))
	defer C.free(unsafe.Pointer(nv))
	var frees []unsafe.Pointer
	defer func() {
		for _, f := range frees {
			C.free(f)
		}
	}()
	cstr := func(s string) *C.char {
		p := C.CString(s)
		frees = append(frees, unsafe.Pointer(p))
		return p
	}
	for i, k := range keys {
		ci, name := C.size_t(i), cstr(k)
		switch v := vals[k].(type) {
		case int:
			C.gp_nv_int64(nv, ci, name, C.int64_t(v))
		case int64:
			C.gp_nv_int64(nv, ci, name, C.int64_t(v))
		case bool:
			b := 0
			if v {
				b = 1
			}
			C.gp_nv_bool(nv, ci, name, C.int(b))
		case float32:
			C.gp_nv_float(nv, ci, name, C.float(v))
		case string:
			C.gp_nv_string(nv, ci, name, cstr(v), C.size_t(len(v)))
		case []int64:
			arr := (*C.int64_t)(C.malloc(C.size_t(8 * (len(v) + 1))))
			frees = append(frees, unsafe.Pointer(arr))
			for j, x := range v {
				unsafe.Slice(arr, len(v))[j] = C.int64_t(x)
			}
			C.gp_nv_int64s(nv, ci, name, arr, C.size_t(len(v)))
		}
	}
	return C.gp_client_create_opts(api, nv, C.size_t(len(keys)), C.uintptr_t(kv), out)
}

// Devices returns the client's addressable devices.
func (c *Client) Devices() []DeviceInfo { return c.p.Devices() }

// Plugin returns the loaded plugin behind the client.
func (c *Client) Plugin() *Plugin { return c.p }

// Close destroys the client. Executables compiled by it must be closed
// first.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	err := perr(c.p.api, "PJRT_Client_Destroy", C.gp_client_destroy(c.p.api, c.p.client))
	if c.kv != 0 {
		unregisterKV(c.kv)
	}
	return err
}

// Array is a dense host array: element type, shape and row-major bytes.
type Array struct {
	DType dtype.DType
	Shape []int
	Data  []byte
}

// F32Array returns an f32 Array of shape holding v.
func F32Array(v []float32, shape ...int) Array {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		dtype.PutFloat64(dtype.F32, b, i, float64(x))
	}
	return Array{DType: dtype.F32, Shape: slices.Clone(shape), Data: b}
}

// F32s returns an f32 array's elements (nil for another dtype).
func (a Array) F32s() []float32 {
	if a.DType != dtype.F32 {
		return nil
	}
	out := make([]float32, len(a.Data)/4)
	for i := range out {
		out[i] = float32(dtype.Float64At(dtype.F32, a.Data, i))
	}
	return out
}

func (a Array) check() error {
	if n := op.Numel(a.Shape) * a.DType.Size(); n != len(a.Data) {
		return fmt.Errorf("pjrt: array %s%v holds %d bytes, want %d", a.DType, a.Shape, len(a.Data), n)
	}
	return nil
}

// Executable is a program compiled for several devices by Client.Compile.
type Executable struct {
	c       *Client
	exe     *C.PJRT_LoadedExecutable
	devices []*C.PJRT_Device
	ids     []int
	outs    int
	opts    BuildOptions
}

// Compile compiles a StableHLO module (MLIR text) with o's replica and
// partition counts, device assignment and partitioner.
func (c *Client) Compile(mlir string, o BuildOptions) (*Executable, error) {
	opts, err := o.proto()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, fmt.Errorf("pjrt: compile: %w", ErrClosed)
	}
	code := C.CString(mlir)
	defer C.free(unsafe.Pointer(code))
	format := C.CString("mlir")
	defer C.free(unsafe.Pointer(format))
	copts := C.CBytes(opts)
	defer C.free(copts)
	var exe *C.PJRT_LoadedExecutable
	e := C.gp_compile(c.p.api, c.p.client, code, C.size_t(len(mlir)), format, (*C.char)(copts), C.size_t(len(opts)), &exe)
	if err := perr(c.p.api, "PJRT_Client_Compile", e); err != nil {
		nr, np := o.counts()
		return nil, fmt.Errorf("pjrt: compiling for %d replica(s) x %d partition(s): %w", nr, np, err)
	}
	x := &Executable{c: c, exe: exe, opts: o}
	fail := func(err error) (*Executable, error) {
		_ = perr(c.p.api, "PJRT_LoadedExecutable_Destroy", C.gp_loaded_destroy(c.p.api, exe))
		return nil, err
	}
	var n C.size_t
	if err := perr(c.p.api, "PJRT_Executable_NumOutputs", C.gp_num_outputs(c.p.api, exe, &n)); err != nil {
		return fail(err)
	}
	x.outs = int(n)
	var devs **C.PJRT_Device
	var nd C.size_t
	if err := perr(c.p.api, "PJRT_LoadedExecutable_AddressableDevices", C.gp_loaded_devices(c.p.api, exe, &devs, &nd)); err != nil {
		return fail(err)
	}
	x.devices = slices.Clone(unsafe.Slice(devs, int(nd)))
	for _, d := range x.devices {
		id := -1
		for i, pd := range c.p.devices {
			if pd == d {
				id = c.p.devInfo[i].ID
			}
		}
		x.ids = append(x.ids, id)
	}
	return x, nil
}

// Devices returns the global ids of the devices the executable runs on, in
// the order of Execute's argument and result lists.
func (x *Executable) Devices() []int { return slices.Clone(x.ids) }

// OptimizedProgram returns the program XLA compiled, after SPMD
// partitioning and optimization, in the plugin's format (XLA: a serialized
// HloModuleProto, whose instructions name their opcodes, e.g.
// "all-reduce"), with the format's name.
func (x *Executable) OptimizedProgram() ([]byte, string, error) {
	x.c.mu.Lock()
	defer x.c.mu.Unlock()
	if x.exe == nil || x.c.closed {
		return nil, "", fmt.Errorf("pjrt: optimized program: %w", ErrClosed)
	}
	if C.gp_has_optimized_program(x.c.p.api) == 0 {
		return nil, "", fmt.Errorf("pjrt: optimized program: the %s plugin lacks PJRT_Executable_OptimizedProgram", x.c.p.Name)
	}
	var out *C.char
	var n C.size_t
	format := (*C.char)(C.calloc(64, 1))
	defer C.free(unsafe.Pointer(format))
	if err := perr(x.c.p.api, "PJRT_Executable_OptimizedProgram", C.gp_optimized_program(x.c.p.api, x.exe, &out, &n, format, 64)); err != nil {
		return nil, "", err
	}
	defer C.free(unsafe.Pointer(out))
	return C.GoBytes(unsafe.Pointer(out), C.int(n)), C.GoString(format), nil
}

// NumOutputs returns the number of results per device.
func (x *Executable) NumOutputs() int { return x.outs }

// Close releases the executable.
func (x *Executable) Close() error {
	x.c.mu.Lock()
	defer x.c.mu.Unlock()
	if x.exe == nil {
		return nil
	}
	err := perr(x.c.p.api, "PJRT_LoadedExecutable_Destroy", C.gp_loaded_destroy(x.c.p.api, x.exe))
	x.exe = nil
	return err
}

// Execute runs the executable once on all of its devices: args[i] are the
// arguments of device Devices()[i] (for an SPMD program, that device's
// shards) and the result's [i] are its outputs, copied to the host.
func (x *Executable) Execute(args [][]Array) ([][]Array, error) {
	x.c.mu.Lock()
	defer x.c.mu.Unlock()
	if x.exe == nil || x.c.closed {
		return nil, fmt.Errorf("pjrt: execute: %w", ErrClosed)
	}
	if len(args) != len(x.devices) {
		return nil, fmt.Errorf("pjrt: execute: %d argument lists for %d devices", len(args), len(x.devices))
	}
	bufs := make([][]*C.PJRT_Buffer, len(args))
	defer func() {
		for _, l := range bufs {
			x.c.destroy(l)
		}
	}()
	for d, list := range args {
		for k, a := range list {
			b, err := x.c.upload(x.devices[d], a)
			if err != nil {
				return nil, fmt.Errorf("pjrt: execute: argument %d of device %d: %w", k, x.ids[d], err)
			}
			bufs[d] = append(bufs[d], b)
		}
	}
	outs, err := x.launch(bufs)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, l := range outs {
			x.c.destroy(l)
		}
	}()
	res := make([][]Array, len(outs))
	for d, l := range outs {
		for k, b := range l {
			a, err := x.c.download(b)
			if err != nil {
				return nil, fmt.Errorf("pjrt: execute: result %d of device %d: %w", k, x.ids[d], err)
			}
			res[d] = append(res[d], a)
		}
	}
	return res, nil
}

// destroy releases buffers (nil entries are skipped). Called with c.mu
// held.
func (c *Client) destroy(bs []*C.PJRT_Buffer) {
	for i, b := range bs {
		if b != nil {
			_ = perr(c.p.api, "PJRT_Buffer_Destroy", C.gp_buffer_destroy(c.p.api, b))
			bs[i] = nil
		}
	}
}

// launch runs x once on all of its devices with argument buffers args[d]
// (borrowed: they stay valid) and returns the output buffers per device,
// owned by the caller. Called with c.mu held.
func (x *Executable) launch(args [][]*C.PJRT_Buffer) ([][]*C.PJRT_Buffer, error) {
	if x.exe == nil || x.c.closed {
		return nil, fmt.Errorf("pjrt: execute: %w", ErrClosed)
	}
	api := x.c.p.api
	nd := len(x.devices)
	if len(args) != nd {
		return nil, fmt.Errorf("pjrt: execute: %d argument lists for %d devices", len(args), nd)
	}
	na := len(args[0])
	for i, a := range args {
		if len(a) != na {
			return nil, fmt.Errorf("pjrt: execute: device %d has %d arguments, device %d has %d", x.ids[i], len(a), x.ids[0], na)
		}
	}
	ptr := C.size_t(unsafe.Sizeof(uintptr(0)))
	cargs := (**C.PJRT_Buffer)(C.calloc(C.size_t(nd*na+1), ptr))
	defer C.free(unsafe.Pointer(cargs))
	couts := (**C.PJRT_Buffer)(C.calloc(C.size_t(nd*x.outs+1), ptr))
	defer C.free(unsafe.Pointer(couts))
	as := unsafe.Slice(cargs, nd*na)
	for d, l := range args {
		copy(as[d*na:], l)
	}
	e := C.gp_execute_all(api, x.exe, cargs, C.size_t(nd), C.size_t(na), couts, C.size_t(x.outs))
	os := unsafe.Slice(couts, nd*x.outs)
	if err := perr(api, "PJRT_LoadedExecutable_Execute", e); err != nil {
		x.c.destroy(os)
		return nil, fmt.Errorf("pjrt: execute on devices %v: %w", x.ids, err)
	}
	res := make([][]*C.PJRT_Buffer, nd)
	for d := range nd {
		res[d] = slices.Clone(os[d*x.outs : (d+1)*x.outs])
	}
	return res, nil
}

// upload copies a to a new buffer on device d. Called with c.mu held.
func (c *Client) upload(d *C.PJRT_Device, a Array) (*C.PJRT_Buffer, error) {
	if err := a.check(); err != nil {
		return nil, err
	}
	ty, ok := pjType(a.DType)
	if !ok {
		return nil, fmt.Errorf("dtype %s has no PJRT type", a.DType)
	}
	cd := make([]C.int64_t, len(a.Shape)+1)
	for i, s := range a.Shape {
		cd[i] = C.int64_t(s)
	}
	var one [8]byte
	p := unsafe.Pointer(&one[0])
	if len(a.Data) > 0 {
		p = unsafe.Pointer(&a.Data[0])
	}
	var out *C.PJRT_Buffer
	e := C.gp_buffer_from_host(c.p.api, c.p.client, d, p, ty, &cd[0], C.size_t(len(a.Shape)), &out)
	runtime.KeepAlive(a.Data)
	runtime.KeepAlive(cd)
	if err := perr(c.p.api, "PJRT_Client_BufferFromHostBuffer", e); err != nil {
		return nil, err
	}
	return out, nil
}

// download copies buffer b to the host.
func (c *Client) download(b *C.PJRT_Buffer) (Array, error) {
	var ty C.int
	var dims *C.int64_t
	var nd C.size_t
	if err := perr(c.p.api, "buffer shape", C.gp_buffer_shape(c.p.api, b, &ty, &dims, &nd)); err != nil {
		return Array{}, err
	}
	dt, ok := dtypeOfPJ(ty)
	if !ok {
		return Array{}, fmt.Errorf("PJRT buffer type %d has no gotpu dtype", int(ty))
	}
	a := Array{DType: dt, Shape: []int{}}
	for _, s := range unsafe.Slice(dims, int(nd)) {
		a.Shape = append(a.Shape, int(s))
	}
	a.Data = make([]byte, op.Numel(a.Shape)*dt.Size())
	if len(a.Data) > 0 {
		e := C.gp_buffer_to_host(c.p.api, b, unsafe.Pointer(&a.Data[0]), C.size_t(len(a.Data)))
		runtime.KeepAlive(a.Data)
		if err := perr(c.p.api, "PJRT_Buffer_ToHostBuffer", e); err != nil {
			return Array{}, err
		}
	}
	return a, nil
}

// dtypeOfPJ is pjType's inverse.
func dtypeOfPJ(t C.int) (dtype.DType, bool) {
	for _, d := range dtype.All {
		if pt, ok := pjType(d); ok && pt == t {
			return d, true
		}
	}
	return 0, false
}
