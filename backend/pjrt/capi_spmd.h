//go:build pjrt

// C helpers for multi-device clients and executables (spmd.go): client
// creation with named options and key-value callbacks, buffer shapes, and
// one launch of an executable on all of its devices.
#ifndef GOTPU_PJRT_CAPI_SPMD_H_
#define GOTPU_PJRT_CAPI_SPMD_H_

#include "capi.h"

// gp_nv_alloc returns n zeroed named values (free with free()).
PJRT_NamedValue* gp_nv_alloc(size_t n);
// gp_nv_* fill value i of vs; the strings and arrays they point to must
// outlive the call that consumes vs.
void gp_nv_int64(PJRT_NamedValue* vs, size_t i, const char* name, int64_t v);
void gp_nv_string(PJRT_NamedValue* vs, size_t i, const char* name,
                  const char* v, size_t n);
void gp_nv_bool(PJRT_NamedValue* vs, size_t i, const char* name, int v);
void gp_nv_float(PJRT_NamedValue* vs, size_t i, const char* name, float v);
void gp_nv_int64s(PJRT_NamedValue* vs, size_t i, const char* name,
                  const int64_t* v, size_t n);

// gp_client_create_opts creates a client with create options; when kv is
// non-zero the client gets key-value callbacks that call the Go store
// registered under handle kv (kv.go).
PJRT_Error* gp_client_create_opts(const PJRT_Api* api,
                                  const PJRT_NamedValue* opts, size_t n,
                                  uintptr_t kv, PJRT_Client** out);

// gp_buffer_shape returns b's element type and dimensions (*dims lives as
// long as b).
PJRT_Error* gp_buffer_shape(const PJRT_Api* api, PJRT_Buffer* b, int* type,
                            const int64_t** dims, size_t* num_dims);

// gp_loaded_devices lists the devices an executable runs on, in the order
// of Execute's argument and output lists.
PJRT_Error* gp_loaded_devices(const PJRT_Api* api, PJRT_LoadedExecutable* e,
                              PJRT_Device* const** devs, size_t* n);

// gp_execute_all launches e once on all of its devices: args is
// num_devices lists of num_args buffers, outs num_devices lists of
// num_outputs slots, both laid out row by row. It waits for every device.
PJRT_Error* gp_execute_all(const PJRT_Api* api, PJRT_LoadedExecutable* e,
                           PJRT_Buffer** args, size_t num_devices,
                           size_t num_args, PJRT_Buffer** outs,
                           size_t num_outputs);

int gp_has_spmd(const PJRT_Api* api);

// gp_optimized_program returns the executable's optimized program (after
// partitioning) as malloc'ed bytes in the plugin's format (a serialized
// HloModuleProto for XLA) and the format's name in format (NUL-terminated,
// truncated to format_cap bytes).
PJRT_Error* gp_optimized_program(const PJRT_Api* api,
                                 PJRT_LoadedExecutable* e, char** out,
                                 size_t* size, char* format,
                                 size_t format_cap);
int gp_has_optimized_program(const PJRT_Api* api);

// gp_kv_call calls the key-value callbacks gp_client_create_opts installs
// the way a plugin does (op 0 put, 1 get, 2 try-get) on the store with
// handle kv, for checking them without a multi-process plugin. A get's
// value is copied to *val (malloc'ed) and released with the callback's
// deleter; a failure returns its code (and malloc'ed message) through
// callback_error instead of a PJRT error.
int gp_kv_call(uintptr_t kv, int op, const char* key, size_t key_size,
               const char* val, size_t val_size, int timeout_ms, char** out,
               size_t* out_size, char** msg);

// gp_await (capi.c) waits for ev, destroys it and returns its error.
PJRT_Error* gp_await(const PJRT_Api* api, PJRT_Event* ev);

#endif  // GOTPU_PJRT_CAPI_SPMD_H_
