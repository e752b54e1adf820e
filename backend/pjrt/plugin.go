//go:build pjrt

package pjrt

/*
#cgo CFLAGS: -I${SRCDIR}/include -O2
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "capi.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"github.com/gotpu/gotpu/device"
)

// The PJRT C API version this package was written against (the vendored
// include/pjrt_c_api.h). A plugin must have the same major version; an older
// minor version is accepted down to minMinor (struct_size fields let both
// sides ignore what the other does not know).
const (
	apiMajor = C.PJRT_API_MAJOR
	apiMinor = C.PJRT_API_MINOR
	minMinor = 40
)

// Sentinel errors.
var (
	// ErrPluginNotFound is returned when no plugin file for a device type
	// exists in any searched location.
	ErrPluginNotFound = errors.New("pjrt: plugin not found")
	// ErrPluginLoad is returned when a plugin file exists but cannot be
	// loaded or initialised (not a PJRT plugin, wrong API version, client
	// creation failed).
	ErrPluginLoad = errors.New("pjrt: plugin failed to load")
	// ErrNoDevices is returned when a plugin loads but has no addressable
	// devices (libtpu on a machine without TPUs).
	ErrNoDevices = errors.New("pjrt: plugin has no devices")
	// ErrUnknownPlugin is returned for a device type this package does not
	// know how to find.
	ErrUnknownPlugin = errors.New("pjrt: unknown plugin name")
	// ErrPJRT wraps every error a PJRT call reported; the message is the
	// plugin's.
	ErrPJRT = errors.New("pjrt")
)

// pluginSpec says where to look for a device type's plugin and what to
// install when it is missing.
type pluginSpec struct {
	name    string   // gotpu device type
	site    []string // globs relative to a python site-packages directory
	cache   []string // globs relative to the fetch cache directory
	libs    []string // library names for the dynamic loader's search path
	install string
}

var specs = []pluginSpec{
	{
		name:    "xla",
		site:    []string{"xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so"},
		cache:   []string{"xla_cpu_pjrt-*/xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so"},
		libs:    []string{"xla_cpu_pjrt.so"},
		install: "run tools/pjrt/fetch.sh (or pip install xla-cpu-pjrt), or set GOTPU_PJRT_PLUGIN=xla=/path/to/xla_cpu_pjrt.so",
	},
	{
		name:    "tpu",
		site:    []string{"libtpu/libtpu.so"},
		libs:    []string{"libtpu.so"},
		install: "pip install libtpu on a TPU VM, or set GOTPU_PJRT_PLUGIN=tpu=/path/to/libtpu.so",
	},
	{
		name:    "cuda",
		site:    []string{"jax_plugins/xla_cuda*/xla_cuda_plugin.so"},
		libs:    []string{"xla_cuda_plugin.so", "pjrt_c_api_gpu_plugin.so"},
		install: "pip install jax-cuda12-plugin (or jax-cuda13-plugin) on a machine with an NVIDIA GPU, or set GOTPU_PJRT_PLUGIN=cuda=/path/to/plugin.so",
	},
}

func specFor(name string) (pluginSpec, bool) {
	for _, s := range specs {
		if s.name == name {
			return s, true
		}
	}
	return pluginSpec{}, false
}

// CacheDir returns the directory tools/pjrt/fetch.sh downloads plugins into:
// $GOTPU_PJRT_CACHE, else $HOME/.cache/gotpu/pjrt.
func CacheDir() string {
	if d := os.Getenv("GOTPU_PJRT_CACHE"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".cache", "gotpu", "pjrt")
}

// envPlugins parses GOTPU_PJRT_PLUGIN ("name=path[,name=path]").
func envPlugins() (map[string]string, error) {
	out := map[string]string{}
	v := strings.TrimSpace(os.Getenv("GOTPU_PJRT_PLUGIN"))
	if v == "" {
		return out, nil
	}
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, path, ok := strings.Cut(item, "=")
		if !ok || name == "" || path == "" {
			return nil, fmt.Errorf("GOTPU_PJRT_PLUGIN: %q is not name=path", item)
		}
		out[name] = path
	}
	return out, nil
}

// sitePackages lists python site-packages directories without running
// python: virtualenvs, pyenv, the user's and the system's.
func sitePackages() []string {
	var pats []string
	if v := os.Getenv("VIRTUAL_ENV"); v != "" {
		pats = append(pats, filepath.Join(v, "lib", "python3*", "site-packages"))
	}
	if v := os.Getenv("CONDA_PREFIX"); v != "" {
		pats = append(pats, filepath.Join(v, "lib", "python3*", "site-packages"))
	}
	for _, p := range filepath.SplitList(os.Getenv("PYTHONPATH")) {
		if p != "" {
			pats = append(pats, p)
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		pats = append(pats,
			filepath.Join(home, ".local", "lib", "python3*", "site-packages"),
			filepath.Join(home, ".pyenv", "versions", "*", "lib", "python3*", "site-packages"))
	}
	pats = append(pats,
		"/usr/local/lib/python3*/site-packages", "/usr/local/lib/python3*/dist-packages",
		"/usr/lib/python3*/site-packages", "/usr/lib/python3/dist-packages", "/opt/conda/lib/python3*/site-packages")
	var out []string
	for _, p := range pats {
		m, _ := filepath.Glob(p)
		sort.Sort(sort.Reverse(sort.StringSlice(m))) // newest python first
		out = append(out, m...)
	}
	return out
}

// Candidates returns, in search order, the plugin files that exist for
// device type name: GOTPU_PJRT_PLUGIN, python site-packages, the fetch
// cache. The dynamic loader's own search (LD_LIBRARY_PATH) comes last and is
// not listed here since only dlopen can resolve it.
func Candidates(name string) ([]string, error) {
	s, ok := specFor(name)
	env, err := envPlugins()
	if err != nil {
		return nil, err
	}
	var out []string
	if p, set := env[name]; set {
		out = append(out, p) // listed even if absent: the load error names it
	}
	if !ok {
		if len(out) == 0 {
			return nil, fmt.Errorf("%w %q (known: xla, tpu, cuda; others need GOTPU_PJRT_PLUGIN=%s=/path/to/plugin.so)", ErrUnknownPlugin, name, name)
		}
		return out, nil
	}
	seen := map[string]bool{}
	add := func(pats []string, dir string) {
		for _, g := range pats {
			m, _ := filepath.Glob(filepath.Join(dir, g))
			sort.Sort(sort.Reverse(sort.StringSlice(m)))
			for _, p := range m {
				if !seen[p] {
					seen[p] = true
					out = append(out, p)
				}
			}
		}
	}
	for _, sp := range sitePackages() {
		add(s.site, sp)
	}
	if d := CacheDir(); d != "" {
		add(s.cache, d)
	}
	return out, nil
}

// Plugin is a loaded PJRT plugin with its client.
type Plugin struct {
	Name            string // gotpu device type
	Path            string
	APIMajor        int
	APIMinor        int
	Platform        string // PJRT platform name ("cpu", "tpu", "cuda")
	PlatformVersion string

	api     *C.PJRT_Api
	handle  unsafe.Pointer
	client  *C.PJRT_Client
	devices []*C.PJRT_Device
	devInfo []DeviceInfo
	// fileSize is the size of the plugin file (0 when the dynamic loader
	// found it), part of ProgramFormat.
	fileSize int64
}

// DeviceInfo describes one addressable device of a plugin.
type DeviceInfo struct {
	ID    int    `json:"id"`
	Kind  string `json:"kind"`
	Debug string `json:"debug"`
}

// Devices returns the plugin's addressable devices.
func (p *Plugin) Devices() []DeviceInfo { return append([]DeviceInfo(nil), p.devInfo...) }

// perr converts a PJRT error into a Go error wrapping ErrPJRT with the
// plugin's message, and destroys the PJRT error. A nil e gives nil.
func perr(api *C.PJRT_Api, what string, e *C.PJRT_Error) error {
	if e == nil {
		return nil
	}
	var code C.int
	msg := C.gp_error_take(api, e, &code)
	s := ""
	if msg != nil {
		s = C.GoString(msg)
		C.free(unsafe.Pointer(msg))
	}
	return fmt.Errorf("%w: %s: %s (code %d)", ErrPJRT, what, s, int(code))
}

// load dlopens path and creates a client. It never panics: every failure is
// an error wrapping ErrPluginLoad or ErrNoDevices.
func load(name, path string) (*Plugin, error) { return loadWith(name, path, nil) }

// clientCreator creates a plugin's client (nil: PJRT_Client_Create with
// no options).
type clientCreator func(api *C.PJRT_Api, out **C.PJRT_Client) *C.PJRT_Error

// loadWith is load with the client created by create (NewClient passes
// create options and key-value callbacks).
func loadWith(name, path string, create clientCreator) (*Plugin, error) {
	if name == "xla" || strings.Contains(filepath.Base(path), "cpu") {
		setXLAFlags()
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var handle unsafe.Pointer
	var cerr *C.char
	api := C.gp_open(cpath, &handle, &cerr)
	if api == nil {
		msg := "unknown error"
		if cerr != nil {
			msg = C.GoString(cerr)
			C.free(unsafe.Pointer(cerr))
		}
		return nil, fmt.Errorf("%w: %s: %s", ErrPluginLoad, path, msg)
	}
	p := &Plugin{Name: name, Path: path, api: api, handle: handle,
		APIMajor: int(api.pjrt_api_version.major_version), APIMinor: int(api.pjrt_api_version.minor_version)}
	fail := func(err error) (*Plugin, error) {
		if p.client != nil {
			_ = perr(api, "client destroy", C.gp_client_destroy(api, p.client))
		}
		// The library is left loaded: plugins register process-wide state
		// (flags, thread pools) that dlclose does not undo safely.
		return nil, err
	}
	if p.APIMajor != apiMajor || p.APIMinor < minMinor {
		return fail(fmt.Errorf("%w: %s: PJRT C API version %d.%d, gotpu needs %d.x with x >= %d (built against %d.%d)",
			ErrPluginLoad, path, p.APIMajor, p.APIMinor, apiMajor, minMinor, apiMajor, apiMinor))
	}
	if m := C.gp_missing_required(api); m != nil {
		return fail(fmt.Errorf("%w: %s: the plugin lacks %s", ErrPluginLoad, path, C.GoString(m)))
	}
	if err := perr(api, "PJRT_Plugin_Initialize", C.gp_plugin_initialize(api)); err != nil {
		return fail(fmt.Errorf("%w: %s: %w", ErrPluginLoad, path, err))
	}
	if create == nil {
		create = func(api *C.PJRT_Api, out **C.PJRT_Client) *C.PJRT_Error { return C.gp_client_create(api, out) }
	}
	var client *C.PJRT_Client
	createErr := create(api, &client)
	p.client = client
	if err := perr(api, "PJRT_Client_Create", createErr); err != nil {
		p.client = nil
		if strings.HasSuffix(err.Error(), "(code 5)") { // PJRT_Error_Code_NOT_FOUND: libtpu without a TPU
			return fail(fmt.Errorf("%w: %s: no %s device on this machine (%w)", ErrNoDevices, path, name, err))
		}
		return fail(fmt.Errorf("%w: %s: %w", ErrPluginLoad, path, err))
	}
	var nm, ver *C.char
	var nml, verl C.size_t
	if err := perr(api, "platform", C.gp_client_platform(api, p.client, &nm, &nml, &ver, &verl)); err != nil {
		return fail(fmt.Errorf("%w: %s: %w", ErrPluginLoad, path, err))
	}
	p.Platform, p.PlatformVersion = C.GoStringN(nm, C.int(nml)), C.GoStringN(ver, C.int(verl))
	var devs **C.PJRT_Device
	var n C.size_t
	if err := perr(api, "PJRT_Client_AddressableDevices", C.gp_client_devices(api, p.client, &devs, &n)); err != nil {
		return fail(fmt.Errorf("%w: %s: %w", ErrPluginLoad, path, err))
	}
	if n == 0 {
		return fail(fmt.Errorf("%w: %s (platform %s) found no %s device on this machine", ErrNoDevices, path, p.Platform, name))
	}
	// One process per accelerator device: the host lock first.
	if _, err := lockDevices(name, int(n)); err != nil {
		return fail(err)
	}
	p.devices = append([]*C.PJRT_Device(nil), unsafe.Slice(devs, int(n))...)
	for _, d := range p.devices {
		var id C.int
		var kind, dbg *C.char
		var kl, dl C.size_t
		if err := perr(api, "device description", C.gp_device_info(api, d, &id, &kind, &kl, &dbg, &dl)); err != nil {
			return fail(fmt.Errorf("%w: %s: %w", ErrPluginLoad, path, err))
		}
		p.devInfo = append(p.devInfo, DeviceInfo{ID: int(id), Kind: C.GoStringN(kind, C.int(kl)), Debug: C.GoStringN(dbg, C.int(dl))})
	}
	if fi, err := os.Stat(path); err == nil {
		p.fileSize = fi.Size()
	}
	return p, nil
}

var (
	mu      sync.Mutex
	loaded  = map[string]*Backend{}
	lastErr = map[string]error{}
)

// Open loads the plugin for device type name ("xla", "tpu", "cuda", or any
// name given a path in GOTPU_PJRT_PLUGIN) and registers its backend with
// device.Register. The search order is GOTPU_PJRT_PLUGIN (name=path,
// comma-separated), python site-packages (xla_plugins/xla_cpu_pjrt,
// libtpu, jax_plugins/xla_cuda*), the fetch cache (CacheDir), then the
// dynamic loader's library path. Opening an already open name is a no-op.
// A missing plugin is an error wrapping ErrPluginNotFound that says what to
// install; one that loads without devices wraps ErrNoDevices.
func Open(name string) error {
	mu.Lock()
	defer mu.Unlock()
	if _, ok := loaded[name]; ok {
		return nil
	}
	b, err := open(name)
	lastErr[name] = err
	if err != nil {
		return err
	}
	loaded[name] = b
	device.Register(b)
	return nil
}

// OpenPath is Open with an explicit plugin file.
func OpenPath(name, path string) error {
	mu.Lock()
	defer mu.Unlock()
	if _, ok := loaded[name]; ok {
		return nil
	}
	p, err := load(name, path)
	lastErr[name] = err
	if err != nil {
		return err
	}
	b := newBackend(p)
	loaded[name] = b
	device.Register(b)
	return nil
}

func open(name string) (*Backend, error) {
	cands, err := Candidates(name)
	if err != nil {
		return nil, err
	}
	var errs []string
	for _, path := range cands {
		p, err := load(name, path)
		if err == nil {
			return newBackend(p), nil
		}
		if errors.Is(err, ErrNoDevices) {
			return nil, err
		}
		errs = append(errs, err.Error())
	}
	s, _ := specFor(name)
	for _, lib := range s.libs {
		p, err := load(name, lib)
		if err == nil {
			return newBackend(p), nil
		}
		if errors.Is(err, ErrNoDevices) {
			return nil, err
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: no usable %s plugin: %s", ErrPluginLoad, name, strings.Join(errs, "; "))
	}
	return nil, fmt.Errorf("%w: no %s plugin in GOTPU_PJRT_PLUGIN, python site-packages, %s or the library path: %s",
		ErrPluginNotFound, name, CacheDir(), s.install)
}

// Status is one plugin's state, for gotpu info.
type Status struct {
	Name            string       `json:"name"`
	Loaded          bool         `json:"loaded"`
	Path            string       `json:"path,omitempty"`
	Platform        string       `json:"platform,omitempty"`
	PlatformVersion string       `json:"platform_version,omitempty"`
	APIVersion      string       `json:"api_version,omitempty"`
	Devices         []DeviceInfo `json:"devices"`
	Error           string       `json:"error,omitempty"`
}

// Statuses reports every known plugin (xla, tpu, cuda and any other that was
// opened), loaded or not, sorted by name.
func Statuses() []Status {
	mu.Lock()
	defer mu.Unlock()
	names := map[string]bool{}
	for _, s := range specs {
		names[s.name] = true
	}
	for n := range loaded {
		names[n] = true
	}
	for n := range lastErr {
		names[n] = true
	}
	var out []Status
	for n := range names {
		st := Status{Name: n, Devices: []DeviceInfo{}}
		if b, ok := loaded[n]; ok {
			p := b.p
			st.Loaded, st.Path, st.Platform, st.PlatformVersion = true, p.Path, p.Platform, p.PlatformVersion
			st.APIVersion = fmt.Sprintf("%d.%d", p.APIMajor, p.APIMinor)
			st.Devices = p.Devices()
		} else if err, ok := lastErr[n]; ok && err != nil {
			st.Error = err.Error()
		} else {
			st.Error = "not opened"
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// AutoOpen is set from GOTPU_PJRT_AUTOLOAD at init: unless it is "0", init
// opens every known plugin whose file is found (a missing one is recorded
// for Statuses, never an error).
var AutoOpen = os.Getenv("GOTPU_PJRT_AUTOLOAD") != "0"

func init() {
	// A device type whose plugin did not load says why (device.Lookup
	// appends the hint to its unknown-device error).
	for _, s := range specs {
		device.SetHint(s.name, func() string { return missingReason(s.name) })
	}
	if !AutoOpen {
		return
	}
	for _, s := range specs {
		cands, err := Candidates(s.name)
		if err != nil || len(cands) == 0 {
			mu.Lock()
			if err == nil {
				err = fmt.Errorf("%w: %s", ErrPluginNotFound, s.install)
			}
			lastErr[s.name] = err
			mu.Unlock()
			continue
		}
		_ = Open(s.name) // recorded in lastErr
	}
	// Plugins under other names given in GOTPU_PJRT_PLUGIN.
	env, err := envPlugins()
	if err != nil {
		return // Open reports the malformed variable
	}
	for name := range env {
		if _, known := specFor(name); !known {
			_ = Open(name)
		}
	}
}

// missingReason says why plugin name is not open: the error of the last
// attempt to open it, or that nothing tried.
func missingReason(name string) string {
	mu.Lock()
	err := lastErr[name]
	mu.Unlock()
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("pjrt: the %s plugin was not opened (GOTPU_PJRT_AUTOLOAD=0: call pjrt.Open(%q)); `gotpu pjrt` lists the plugins found", name, name)
}

// setXLAFlags makes XLA:CPU propagate NaN through max and min (PyTorch's
// maximum, amax, max pooling and clamp do; XLA:CPU's fast min/max does
// not) unless XLA_FLAGS already sets the flag. The plugin reads XLA_FLAGS
// when it creates its client.
func setXLAFlags() {
	const flag = "--xla_cpu_enable_fast_min_max"
	cur := os.Getenv("XLA_FLAGS")
	if strings.Contains(cur, flag) {
		return
	}
	_ = os.Setenv("XLA_FLAGS", strings.TrimSpace(cur+" "+flag+"=false"))
}
