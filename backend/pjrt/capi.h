//go:build pjrt

// C helpers over the PJRT C API: each wraps one call (filling its argument
// struct, awaiting and destroying events) so the Go side never builds PJRT
// structs itself. Every function returning PJRT_Error* returns NULL on
// success; the caller turns a non-NULL error into a Go error with
// gp_error_take, which destroys it.
#ifndef GOTPU_PJRT_CAPI_H_
#define GOTPU_PJRT_CAPI_H_

#include <stddef.h>
#include <stdint.h>

#include "pjrt_c_api.h"

// gp_open dlopens path and returns its GetPjrtApi() result, or NULL with a
// malloc'ed message in *err.
const PJRT_Api* gp_open(const char* path, void** handle, char** err);
void gp_close(void* handle);

// gp_has reports whether the plugin's API table is long enough to hold the
// function at byte offset off and the pointer is set.
int gp_has(const PJRT_Api* api, size_t off);

// gp_error_take copies the error's message (malloc'ed) and code, and
// destroys the error.
char* gp_error_take(const PJRT_Api* api, PJRT_Error* e, int* code);

PJRT_Error* gp_plugin_initialize(const PJRT_Api* api);
PJRT_Error* gp_client_create(const PJRT_Api* api, PJRT_Client** out);
PJRT_Error* gp_client_destroy(const PJRT_Api* api, PJRT_Client* c);
PJRT_Error* gp_client_platform(const PJRT_Api* api, PJRT_Client* c,
                               const char** name, size_t* name_len,
                               const char** version, size_t* version_len);
PJRT_Error* gp_client_devices(const PJRT_Api* api, PJRT_Client* c,
                              PJRT_Device* const** devs, size_t* n);
PJRT_Error* gp_device_info(const PJRT_Api* api, PJRT_Device* d, int* id,
                           const char** kind, size_t* kind_len,
                           const char** debug, size_t* debug_len);
PJRT_Error* gp_device_memstats(const PJRT_Api* api, PJRT_Device* d,
                               int64_t* in_use, int64_t* peak, int* has_peak,
                               int64_t* limit, int* has_limit);

PJRT_Error* gp_buffer_from_host(const PJRT_Api* api, PJRT_Client* c,
                                PJRT_Device* d, const void* data, int type,
                                const int64_t* dims, size_t num_dims,
                                PJRT_Buffer** out);
PJRT_Error* gp_buffer_to_host(const PJRT_Api* api, PJRT_Buffer* b, void* dst,
                              size_t size);
PJRT_Error* gp_buffer_destroy(const PJRT_Api* api, PJRT_Buffer* b);

PJRT_Error* gp_compile(const PJRT_Api* api, PJRT_Client* c, const char* code,
                       size_t code_size, const char* format,
                       const char* options, size_t options_size,
                       PJRT_LoadedExecutable** out);
PJRT_Error* gp_loaded_destroy(const PJRT_Api* api, PJRT_LoadedExecutable* e);
PJRT_Error* gp_num_outputs(const PJRT_Api* api, PJRT_LoadedExecutable* e,
                           size_t* n);
PJRT_Error* gp_execute(const PJRT_Api* api, PJRT_LoadedExecutable* e,
                       PJRT_Device* d, PJRT_Buffer** args, size_t num_args,
                       PJRT_Buffer** outs);
PJRT_Error* gp_serialize(const PJRT_Api* api, PJRT_LoadedExecutable* e,
                         char** out, size_t* size);
PJRT_Error* gp_deserialize(const PJRT_Api* api, PJRT_Client* c,
                           const char* data, size_t size,
                           PJRT_LoadedExecutable** out);



// gp_missing_required names the first function gotpu needs that the plugin
// lacks, or returns NULL.
const char* gp_missing_required(const PJRT_Api* api);
int gp_has_memstats(const PJRT_Api* api);
int gp_has_serialize(const PJRT_Api* api);
#endif  // GOTPU_PJRT_CAPI_H_
