//go:build pjrt

#include "capi.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#define GP_HAS(api, fn) gp_has((api), offsetof(PJRT_Api, fn))

// gp_missing builds an error-free NULL-safe failure for an absent function:
// there is no PJRT_Error to return, so the Go side checks gp_has first.

static char* gp_strdup(const char* s, size_t n) {
  char* out = (char*)malloc(n + 1);
  if (out == NULL) return NULL;
  memcpy(out, s, n);
  out[n] = 0;
  return out;
}

const PJRT_Api* gp_open(const char* path, void** handle, char** err) {
  *handle = NULL;
  *err = NULL;
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    const char* m = dlerror();
    if (m == NULL) m = "dlopen failed";
    *err = gp_strdup(m, strlen(m));
    return NULL;
  }
  typedef const PJRT_Api* (*get_api_fn)(void);
  get_api_fn f = (get_api_fn)dlsym(h, "GetPjrtApi");
  if (f == NULL) {
    const char* m = "the library has no GetPjrtApi symbol (not a PJRT plugin)";
    *err = gp_strdup(m, strlen(m));
    dlclose(h);
    return NULL;
  }
  const PJRT_Api* api = f();
  if (api == NULL) {
    const char* m = "GetPjrtApi returned NULL";
    *err = gp_strdup(m, strlen(m));
    dlclose(h);
    return NULL;
  }
  *handle = h;
  return api;
}

void gp_close(void* handle) {
  if (handle != NULL) dlclose(handle);
}

int gp_has(const PJRT_Api* api, size_t off) {
  if (off + sizeof(void*) > api->struct_size) return 0;
  void* const* p = (void* const*)((const char*)api + off);
  return *p != NULL;
}

char* gp_error_take(const PJRT_Api* api, PJRT_Error* e, int* code) {
  *code = 0;
  char* msg = NULL;
  if (GP_HAS(api, PJRT_Error_Message)) {
    PJRT_Error_Message_Args a;
    memset(&a, 0, sizeof a);
    a.struct_size = PJRT_Error_Message_Args_STRUCT_SIZE;
    a.error = e;
    api->PJRT_Error_Message(&a);
    msg = gp_strdup(a.message != NULL ? a.message : "", a.message_size);
  }
  if (GP_HAS(api, PJRT_Error_GetCode)) {
    PJRT_Error_GetCode_Args c;
    memset(&c, 0, sizeof c);
    c.struct_size = PJRT_Error_GetCode_Args_STRUCT_SIZE;
    c.error = e;
    if (api->PJRT_Error_GetCode(&c) == NULL) *code = (int)c.code;
  }
  if (GP_HAS(api, PJRT_Error_Destroy)) {
    PJRT_Error_Destroy_Args d;
    memset(&d, 0, sizeof d);
    d.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE;
    d.error = e;
    api->PJRT_Error_Destroy(&d);
  }
  return msg;
}

// gp_await waits for ev, destroys it and returns its error.
PJRT_Error* gp_await(const PJRT_Api* api, PJRT_Event* ev) {
  if (ev == NULL) return NULL;
  PJRT_Event_Await_Args a;
  memset(&a, 0, sizeof a);
  a.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE;
  a.event = ev;
  PJRT_Error* err = api->PJRT_Event_Await(&a);
  PJRT_Event_Destroy_Args d;
  memset(&d, 0, sizeof d);
  d.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE;
  d.event = ev;
  PJRT_Error* derr = api->PJRT_Event_Destroy(&d);
  if (err == NULL) return derr;
  if (derr != NULL) {
    int code;
    free(gp_error_take(api, derr, &code));
  }
  return err;
}

PJRT_Error* gp_plugin_initialize(const PJRT_Api* api) {
  if (!GP_HAS(api, PJRT_Plugin_Initialize)) return NULL;
  PJRT_Plugin_Initialize_Args a;
  memset(&a, 0, sizeof a);
  a.struct_size = PJRT_Plugin_Initialize_Args_STRUCT_SIZE;
  return api->PJRT_Plugin_Initialize(&a);
}

PJRT_Error* gp_client_create(const PJRT_Api* api, PJRT_Client** out) {
  PJRT_Client_Create_Args a;
  memset(&a, 0, sizeof a);
  a.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE;
  PJRT_Error* err = api->PJRT_Client_Create(&a);
  *out = a.client;
  return err;
}

PJRT_Error* gp_client_destroy(const PJRT_Api* api, PJRT_Client* c) {
  PJRT_Client_Destroy_Args a;
  memset(&a, 0, sizeof a);
  a.struct_size = PJRT_Client_Destroy_Args_STRUCT_SIZE;
  a.client = c;
  return api->PJRT_Client_Destroy(&a);
}

PJRT_Error* gp_client_platform(const PJRT_Api* api, PJRT_Client* c,
                               const char** name, size_t* name_len,
                               const char** version, size_t* version_len) {
  PJRT_Client_PlatformName_Args a;
  memset(&a, 0, sizeof a);
  a.struct_size = PJRT_Client_PlatformName_Args_STRUCT_SIZE;
  a.client = c;
  PJRT_Error* err = api->PJRT_Client_PlatformName(&a);
  if (err != NULL) return err;
  *name = a.platform_name;
  *name_len = a.platform_name_size;
  PJRT_Client_PlatformVersion_Args v;
  memset(&v, 0, sizeof v);
  v.struct_size = PJRT_Client_PlatformVersion_Args_STRUCT_SIZE;
  v.client = c;
  err = api->PJRT_Client_PlatformVersion(&v);
  if (err != NULL) return err;
  *version = v.platform_version;
  *version_len = v.platform_version_size;
  return NULL;
}

PJRT_Error* gp_client_devices(const PJRT_Api* api, PJRT_Client* c,
                              PJRT_Device* const** devs, size_t* n) {
  PJRT_Client_AddressableDevices_Args a;
  memset(&a, 0, sizeof a);
  a.struct_size = PJRT_Client_AddressableDevices_Args_STRUCT_SIZE;
  a.client = c;
  PJRT_Error* err = api->PJRT_Client_AddressableDevices(&a);
  *devs = a.addressable_devices;
  *n = a.num_addressable_devices;
  return err;
}

PJRT_Error* gp_device_info(const PJRT_Api* api, PJRT_Device* d, int* id,
                           const char** kind, size_t* kind_len,
                           const char** debug, size_t* debug_len) {
  PJRT_Device_GetDescription_Args g;
  memset(&g, 0, sizeof g);
  g.struct_size = PJRT_Device_GetDescription_Args_STRUCT_SIZE;
  g.device = d;
  PJRT_Error* err = api->PJRT_Device_GetDescription(&g);
  if (err != NULL) return err;
  PJRT_DeviceDescription_Id_Args i;
  memset(&i, 0, sizeof i);
  i.struct_size = PJRT_DeviceDescription_Id_Args_STRUCT_SIZE;
  i.device_description = g.device_description;
  if ((err = api->PJRT_DeviceDescription_Id(&i)) != NULL) return err;
  *id = i.id;
  PJRT_DeviceDescription_Kind_Args k;
  memset(&k, 0, sizeof k);
  k.struct_size = PJRT_DeviceDescription_Kind_Args_STRUCT_SIZE;
  k.device_description = g.device_description;
  if ((err = api->PJRT_DeviceDescription_Kind(&k)) != NULL) return err;
  *kind = k.device_kind;
  *kind_len = k.device_kind_size;
  PJRT_DeviceDescription_DebugString_Args s;
  memset(&s, 0, sizeof s);
  s.struct_size = PJRT_DeviceDescription_DebugString_Args_STRUCT_SIZE;
  s.device_description = g.device_description;
  if ((err = api->PJRT_DeviceDescription_DebugString(&s)) != NULL) return err;
  *debug = s.debug_string;
  *debug_len = s.debug_string_size;
  return NULL;
}

PJRT_Error* gp_device_memstats(const PJRT_Api* api, PJRT_Device* d,
                               int64_t* in_use, int64_t* peak, int* has_peak,
                               int64_t* limit, int* has_limit) {
  PJRT_Device_MemoryStats_Args a;
  memset(&a, 0, sizeof a);
  a.struct_size = PJRT_Device_MemoryStats_Args_STRUCT_SIZE;
  a.device = d;
  PJRT_Error* err = api->PJRT_Device_MemoryStats(&a);
  if (err != NULL) return err;
  *in_use = a.bytes_in_use;
  *peak = a.peak_bytes_in_use;
  *has_peak = a.peak_bytes_in_use_is_set;
  *limit = a.bytes_limit;
  *has_limit = a.bytes_limit_is_set;
  return NULL;
}

PJRT_Error* gp_buffer_from_host(const PJRT_Api* api, PJRT_Client* c,
                                PJRT_Device* d, const void* data, int type,
                                const int64_t* dims, size_t num_dims,
                                PJRT_Buffer** out) {
  PJRT_Client_BufferFromHostBuffer_Args a;
  memset(&a, 0, sizeof a);
  a.struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE;
  a.client = c;
  a.data = data;
  a.type = (PJRT_Buffer_Type)type;
  a.dims = dims;
  a.num_dims = num_dims;
  a.host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableOnlyDuringCall;
  a.device = d;
  *out = NULL;
  PJRT_Error* err = api->PJRT_Client_BufferFromHostBuffer(&a);
  if (err != NULL) return err;
  err = gp_await(api, a.done_with_host_buffer);
  if (err != NULL) {
    gp_buffer_destroy(api, a.buffer);
    return err;
  }
  *out = a.buffer;
  return NULL;
}

PJRT_Error* gp_buffer_to_host(const PJRT_Api* api, PJRT_Buffer* b, void* dst,
                              size_t size) {
  PJRT_Buffer_ToHostBuffer_Args a;
  memset(&a, 0, sizeof a);
  a.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE;
  a.src = b;
  a.dst = dst;
  a.dst_size = size;
  PJRT_Error* err = api->PJRT_Buffer_ToHostBuffer(&a);
  if (err != NULL) return err;
  return gp_await(api, a.event);
}

PJRT_Error* gp_buffer_destroy(const PJRT_Api* api, PJRT_Buffer* b) {
  if (b == NULL) return NULL;
  PJRT_Buffer_Destroy_Args a;
  memset(&a, 0, sizeof a);
  a.struct_size = PJRT_Buffer_Destroy_Args_STRUCT_SIZE;
  a.buffer = b;
  return api->PJRT_Buffer_Destroy(&a);
}

PJRT_Error* gp_compile(const PJRT_Api* api, PJRT_Client* c, const char* code,
                       size_t code_size, const char* format,
                       const char* options, size_t options_size,
                       PJRT_LoadedExecutable** out) {
  PJRT_Program p;
  memset(&p, 0, sizeof p);
  p.struct_size = PJRT_Program_STRUCT_SIZE;
  p.code = (char*)code;
  p.code_size = code_size;
  p.format = format;
  p.format_size = strlen(format);
  PJRT_Client_Compile_Args a;
  memset(&a, 0, sizeof a);
  a.struct_size = PJRT_Client_Compile_Args_STRUCT_SIZE;
  a.client = c;
  a.program = &p;
  a.compile_options = options;
  a.compile_options_size = options_size;
  PJRT_Error* err = api->PJRT_Client_Compile(&a);
  *out = a.executable;
  return err;
}

PJRT_Error* gp_loaded_destroy(const PJRT_Api* api, PJRT_LoadedExecutable* e) {
  if (e == NULL) return NULL;
  PJRT_LoadedExecutable_Destroy_Args a;
  memset(&a, 0, sizeof a);
  a.struct_size = PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE;
  a.executable = e;
  return api->PJRT_LoadedExecutable_Destroy(&a);
}

static PJRT_Error* gp_get_executable(const PJRT_Api* api,
                                     PJRT_LoadedExecutable* e,
                                     PJRT_Executable** out) {
  PJRT_LoadedExecutable_GetExecutable_Args a;
  memset(&a, 0, sizeof a);
  a.struct_size = PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE;
  a.loaded_executable = e;
  PJRT_Error* err = api->PJRT_LoadedExecutable_GetExecutable(&a);
  *out = a.executable;
  return err;
}

static void gp_executable_destroy(const PJRT_Api* api, PJRT_Executable* x) {
  PJRT_Executable_Destroy_Args a;
  memset(&a, 0, sizeof a);
  a.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE;
  a.executable = x;
  PJRT_Error* err = api->PJRT_Executable_Destroy(&a);
  if (err != NULL) {
    int code;
    free(gp_error_take(api, err, &code));
  }
}

PJRT_Error* gp_num_outputs(const PJRT_Api* api, PJRT_LoadedExecutable* e,
                           size_t* n) {
  PJRT_Executable* x = NULL;
  PJRT_Error* err = gp_get_executable(api, e, &x);
  if (err != NULL) return err;
  PJRT_Executable_NumOutputs_Args a;
  memset(&a, 0, sizeof a);
  a.struct_size = PJRT_Executable_NumOutputs_Args_STRUCT_SIZE;
  a.executable = x;
  err = api->PJRT_Executable_NumOutputs(&a);
  *n = a.num_outputs;
  gp_executable_destroy(api, x);
  return err;
}

PJRT_Error* gp_execute(const PJRT_Api* api, PJRT_LoadedExecutable* e,
                       PJRT_Device* d, PJRT_Buffer** args, size_t num_args,
                       PJRT_Buffer** outs) {
  PJRT_ExecuteOptions o;
  memset(&o, 0, sizeof o);
  o.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE;
  PJRT_Buffer* const* arg_lists[1] = {args};
  PJRT_Buffer** out_lists[1] = {outs};
  PJRT_Event* done[1] = {NULL};
  PJRT_LoadedExecutable_Execute_Args a;
  memset(&a, 0, sizeof a);
  a.struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE;
  a.executable = e;
  a.options = &o;
  a.argument_lists = arg_lists;
  a.num_devices = 1;
  a.num_args = num_args;
  a.output_lists = out_lists;
  a.device_complete_events = done;
  a.execute_device = d;
  PJRT_Error* err = api->PJRT_LoadedExecutable_Execute(&a);
  if (err != NULL) return err;
  return gp_await(api, done[0]);
}

PJRT_Error* gp_serialize(const PJRT_Api* api, PJRT_LoadedExecutable* e,
                         char** out, size_t* size) {
  *out = NULL;
  *size = 0;
  PJRT_Executable* x = NULL;
  PJRT_Error* err = gp_get_executable(api, e, &x);
  if (err != NULL) return err;
  PJRT_Executable_Serialize_Args a;
  memset(&a, 0, sizeof a);
  a.struct_size = PJRT_Executable_Serialize_Args_STRUCT_SIZE;
  a.executable = x;
  err = api->PJRT_Executable_Serialize(&a);
  if (err == NULL) {
    *out = (char*)malloc(a.serialized_bytes_size > 0 ? a.serialized_bytes_size : 1);
    if (*out != NULL) {
      memcpy(*out, a.serialized_bytes, a.serialized_bytes_size);
      *size = a.serialized_bytes_size;
    }
    if (a.serialized_executable_deleter != NULL) {
      a.serialized_executable_deleter(a.serialized_executable);
    }
  }
  gp_executable_destroy(api, x);
  return err;
}

PJRT_Error* gp_deserialize(const PJRT_Api* api, PJRT_Client* c,
                           const char* data, size_t size,
                           PJRT_LoadedExecutable** out) {
  PJRT_Executable_DeserializeAndLoad_Args a;
  memset(&a, 0, sizeof a);
  a.struct_size = PJRT_Executable_DeserializeAndLoad_Args_STRUCT_SIZE;
  a.client = c;
  a.serialized_executable = data;
  a.serialized_executable_size = size;
  PJRT_Error* err = api->PJRT_Executable_DeserializeAndLoad(&a);
  *out = a.loaded_executable;
  return err;
}

const char* gp_missing_required(const PJRT_Api* api) {
#define GP_REQ(fn) \
  if (!GP_HAS(api, fn)) return #fn;
  GP_REQ(PJRT_Error_Destroy)
  GP_REQ(PJRT_Error_Message)
  GP_REQ(PJRT_Event_Destroy)
  GP_REQ(PJRT_Event_Await)
  GP_REQ(PJRT_Client_Create)
  GP_REQ(PJRT_Client_Destroy)
  GP_REQ(PJRT_Client_PlatformName)
  GP_REQ(PJRT_Client_PlatformVersion)
  GP_REQ(PJRT_Client_AddressableDevices)
  GP_REQ(PJRT_Client_Compile)
  GP_REQ(PJRT_Client_BufferFromHostBuffer)
  GP_REQ(PJRT_Device_GetDescription)
  GP_REQ(PJRT_DeviceDescription_Id)
  GP_REQ(PJRT_DeviceDescription_Kind)
  GP_REQ(PJRT_DeviceDescription_DebugString)
  GP_REQ(PJRT_Executable_Destroy)
  GP_REQ(PJRT_Executable_NumOutputs)
  GP_REQ(PJRT_LoadedExecutable_Destroy)
  GP_REQ(PJRT_LoadedExecutable_GetExecutable)
  GP_REQ(PJRT_LoadedExecutable_Execute)
  GP_REQ(PJRT_Buffer_Destroy)
  GP_REQ(PJRT_Buffer_ToHostBuffer)
#undef GP_REQ
  return NULL;
}

int gp_has_memstats(const PJRT_Api* api) { return GP_HAS(api, PJRT_Device_MemoryStats); }
int gp_has_serialize(const PJRT_Api* api) {
  return GP_HAS(api, PJRT_Executable_Serialize) && GP_HAS(api, PJRT_Executable_DeserializeAndLoad);
}
