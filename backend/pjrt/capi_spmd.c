//go:build pjrt

#include "capi_spmd.h"

#include <stdlib.h>
#include <string.h>

#include "_cgo_export.h"

#define GP_HAS(api, fn) gp_has((api), offsetof(PJRT_Api, fn))

PJRT_NamedValue* gp_nv_alloc(size_t n) {
  return (PJRT_NamedValue*)calloc(n > 0 ? n : 1, sizeof(PJRT_NamedValue));
}

static void gp_nv_head(PJRT_NamedValue* v, const char* name) {
  v->struct_size = PJRT_NamedValue_STRUCT_SIZE;
  v->name = name;
  v->name_size = strlen(name);
  v->value_size = 1;
}

void gp_nv_int64(PJRT_NamedValue* vs, size_t i, const char* name, int64_t x) {
  gp_nv_head(&vs[i], name);
  vs[i].type = PJRT_NamedValue_kInt64;
  vs[i].int64_value = x;
}

void gp_nv_string(PJRT_NamedValue* vs, size_t i, const char* name,
                  const char* x, size_t n) {
  gp_nv_head(&vs[i], name);
  vs[i].type = PJRT_NamedValue_kString;
  vs[i].string_value = x;
  vs[i].value_size = n;
}

void gp_nv_bool(PJRT_NamedValue* vs, size_t i, const char* name, int x) {
  gp_nv_head(&vs[i], name);
  vs[i].type = PJRT_NamedValue_kBool;
  vs[i].bool_value = x != 0;
}

void gp_nv_float(PJRT_NamedValue* vs, size_t i, const char* name, float x) {
  gp_nv_head(&vs[i], name);
  vs[i].type = PJRT_NamedValue_kFloat;
  vs[i].float_value = x;
}

void gp_nv_int64s(PJRT_NamedValue* vs, size_t i, const char* name,
                  const int64_t* x, size_t n) {
  gp_nv_head(&vs[i], name);
  vs[i].type = PJRT_NamedValue_kInt64List;
  vs[i].int64_array_value = x;
  vs[i].value_size = n;
}

// The key-value callbacks forward to the Go store (kv.go). A failure is
// turned into a PJRT error through the plugin's callback_error.
static PJRT_Error* gp_kv_error(PJRT_CallbackError* mk, int code, char* msg) {
  const char* m = msg != NULL ? msg : "key-value store error";
  PJRT_Error* e = NULL;
  if (mk != NULL && *mk != NULL) e = (*mk)((PJRT_Error_Code)code, m, strlen(m));
  free(msg);
  return e;
}

static void gp_kv_free(char* v) { free(v); }

static PJRT_Error* gp_kv_get(PJRT_KeyValueGetCallback_Args* a) {
  char* val = NULL;
  size_t n = 0;
  char* msg = NULL;
  int code = goKVGet((uintptr_t)a->user_arg, (char*)a->key, a->key_size,
                     a->timeout_in_ms, 0, &val, &n, &msg);
  if (code != 0) return gp_kv_error(a->callback_error, code, msg);
  a->value = val;
  a->value_size = n;
  a->value_deleter_callback = gp_kv_free;
  return NULL;
}

static PJRT_Error* gp_kv_try_get(PJRT_KeyValueTryGetCallback_Args* a) {
  char* val = NULL;
  size_t n = 0;
  char* msg = NULL;
  int code = goKVGet((uintptr_t)a->user_arg, (char*)a->key, a->key_size, 0, 1,
                     &val, &n, &msg);
  if (code != 0) return gp_kv_error(a->callback_error, code, msg);
  a->value = val;
  a->value_size = n;
  a->value_deleter_callback = gp_kv_free;
  return NULL;
}

static PJRT_Error* gp_kv_put(PJRT_KeyValuePutCallback_Args* a) {
  char* msg = NULL;
  int code = goKVPut((uintptr_t)a->user_arg, (char*)a->key, a->key_size,
                     (char*)a->value, a->value_size, &msg);
  if (code != 0) return gp_kv_error(a->callback_error, code, msg);
  return NULL;
}

PJRT_Error* gp_client_create_opts(const PJRT_Api* api,
                                  const PJRT_NamedValue* opts, size_t n,
                                  uintptr_t kv, PJRT_Client** out) {
  PJRT_Client_Create_Args a;
  memset(&a, 0, sizeof a);
  a.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE;
  a.create_options = opts;
  a.num_options = n;
  if (kv != 0) {
    a.kv_get_callback = gp_kv_get;
    a.kv_get_user_arg = (void*)kv;
    a.kv_put_callback = gp_kv_put;
    a.kv_put_user_arg = (void*)kv;
    a.kv_try_get_callback = gp_kv_try_get;
    a.kv_try_get_user_arg = (void*)kv;
  }
  PJRT_Error* err = api->PJRT_Client_Create(&a);
  *out = a.client;
  return err;
}

PJRT_Error* gp_buffer_shape(const PJRT_Api* api, PJRT_Buffer* b, int* type,
                            const int64_t** dims, size_t* num_dims) {
  PJRT_Buffer_ElementType_Args t;
  memset(&t, 0, sizeof t);
  t.struct_size = PJRT_Buffer_ElementType_Args_STRUCT_SIZE;
  t.buffer = b;
  PJRT_Error* err = api->PJRT_Buffer_ElementType(&t);
  if (err != NULL) return err;
  *type = (int)t.type;
  PJRT_Buffer_Dimensions_Args d;
  memset(&d, 0, sizeof d);
  d.struct_size = PJRT_Buffer_Dimensions_Args_STRUCT_SIZE;
  d.buffer = b;
  err = api->PJRT_Buffer_Dimensions(&d);
  if (err != NULL) return err;
  *dims = d.dims;
  *num_dims = d.num_dims;
  return NULL;
}

PJRT_Error* gp_loaded_devices(const PJRT_Api* api, PJRT_LoadedExecutable* e,
                              PJRT_Device* const** devs, size_t* n) {
  PJRT_LoadedExecutable_AddressableDevices_Args a;
  memset(&a, 0, sizeof a);
  a.struct_size = PJRT_LoadedExecutable_AddressableDevices_Args_STRUCT_SIZE;
  a.executable = e;
  PJRT_Error* err = api->PJRT_LoadedExecutable_AddressableDevices(&a);
  *devs = a.addressable_devices;
  *n = a.num_addressable_devices;
  return err;
}

PJRT_Error* gp_execute_all(const PJRT_Api* api, PJRT_LoadedExecutable* e,
                           PJRT_Buffer** args, size_t num_devices,
                           size_t num_args, PJRT_Buffer** outs,
                           size_t num_outputs) {
  size_t nd = num_devices > 0 ? num_devices : 1;
  PJRT_Buffer** arg_lists[nd];
  PJRT_Buffer** out_lists[nd];
  PJRT_Event* done[nd];
  for (size_t d = 0; d < num_devices; d++) {
    arg_lists[d] = args + d * num_args;
    out_lists[d] = outs + d * num_outputs;
    done[d] = NULL;
  }
  PJRT_ExecuteOptions o;
  memset(&o, 0, sizeof o);
  o.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE;
  PJRT_LoadedExecutable_Execute_Args a;
  memset(&a, 0, sizeof a);
  a.struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE;
  a.executable = e;
  a.options = &o;
  a.argument_lists = (PJRT_Buffer* const* const*)arg_lists;
  a.num_devices = num_devices;
  a.num_args = num_args;
  a.output_lists = out_lists;
  a.device_complete_events = done;
  PJRT_Error* err = api->PJRT_LoadedExecutable_Execute(&a);
  if (err != NULL) return err;
  // Wait for every device even after a failure: the buffers must not be
  // released while a device still runs.
  PJRT_Error* first = NULL;
  for (size_t d = 0; d < num_devices; d++) {
    PJRT_Error* de = gp_await(api, done[d]);
    if (de == NULL) continue;
    if (first == NULL) {
      first = de;
    } else {
      int code;
      free(gp_error_take(api, de, &code));
    }
  }
  return first;
}

int gp_has_spmd(const PJRT_Api* api) {
  return GP_HAS(api, PJRT_Buffer_ElementType) &&
         GP_HAS(api, PJRT_Buffer_Dimensions) &&
         GP_HAS(api, PJRT_LoadedExecutable_AddressableDevices);
}

// gp_kv_call's stand-in for a plugin's callback_error: it records the code
// and message in thread-local storage and returns a non-NULL marker.
static __thread int gp_kv_call_code;
static __thread char* gp_kv_call_msg;
static char gp_kv_call_marker;

static PJRT_Error* gp_kv_call_error(PJRT_Error_Code code, const char* m,
                                    size_t n) {
  gp_kv_call_code = (int)code;
  gp_kv_call_msg = (char*)malloc(n + 1);
  if (gp_kv_call_msg != NULL) {
    memcpy(gp_kv_call_msg, m, n);
    gp_kv_call_msg[n] = 0;
  }
  return (PJRT_Error*)&gp_kv_call_marker;
}

int gp_kv_call(uintptr_t kv, int op, const char* key, size_t key_size,
               const char* val, size_t val_size, int timeout_ms, char** out,
               size_t* out_size, char** msg) {
  PJRT_CallbackError mk = gp_kv_call_error;
  PJRT_Error* err = NULL;
  char* v = NULL;
  size_t vn = 0;
  void (*deleter)(char*) = NULL;
  gp_kv_call_code = 0;
  gp_kv_call_msg = NULL;
  *out = NULL;
  *out_size = 0;
  if (op == 0) {
    PJRT_KeyValuePutCallback_Args a;
    memset(&a, 0, sizeof a);
    a.struct_size = PJRT_KeyValuePutCallback_Args_STRUCT_SIZE;
    a.key = key;
    a.key_size = key_size;
    a.value = val;
    a.value_size = val_size;
    a.callback_error = &mk;
    a.user_arg = (void*)kv;
    err = gp_kv_put(&a);
  } else if (op == 1) {
    PJRT_KeyValueGetCallback_Args a;
    memset(&a, 0, sizeof a);
    a.struct_size = PJRT_KeyValueGetCallback_Args_STRUCT_SIZE;
    a.key = key;
    a.key_size = key_size;
    a.timeout_in_ms = timeout_ms;
    a.callback_error = &mk;
    a.user_arg = (void*)kv;
    err = gp_kv_get(&a);
    v = a.value;
    vn = a.value_size;
    deleter = a.value_deleter_callback;
  } else {
    PJRT_KeyValueTryGetCallback_Args a;
    memset(&a, 0, sizeof a);
    a.struct_size = PJRT_KeyValueTryGetCallback_Args_STRUCT_SIZE;
    a.key = key;
    a.key_size = key_size;
    a.callback_error = &mk;
    a.user_arg = (void*)kv;
    err = gp_kv_try_get(&a);
    v = a.value;
    vn = a.value_size;
    deleter = a.value_deleter_callback;
  }
  if (err != NULL) {
    *msg = gp_kv_call_msg;
    return gp_kv_call_code != 0 ? gp_kv_call_code : -1;
  }
  if (v != NULL) {
    *out = (char*)malloc(vn > 0 ? vn : 1);
    if (*out != NULL) memcpy(*out, v, vn);
    *out_size = vn;
    if (deleter != NULL) deleter(v);
  }
  return 0;
}

int gp_has_optimized_program(const PJRT_Api* api) {
  return GP_HAS(api, PJRT_Executable_OptimizedProgram) &&
         GP_HAS(api, PJRT_LoadedExecutable_GetExecutable);
}

PJRT_Error* gp_optimized_program(const PJRT_Api* api,
                                 PJRT_LoadedExecutable* e, char** out,
                                 size_t* size, char* format,
                                 size_t format_cap) {
  *out = NULL;
  *size = 0;
  if (format_cap > 0) format[0] = 0;
  PJRT_LoadedExecutable_GetExecutable_Args g;
  memset(&g, 0, sizeof g);
  g.struct_size = PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE;
  g.loaded_executable = e;
  PJRT_Error* err = api->PJRT_LoadedExecutable_GetExecutable(&g);
  if (err != NULL) return err;
  PJRT_Program p;
  memset(&p, 0, sizeof p);
  p.struct_size = PJRT_Program_STRUCT_SIZE;
  PJRT_Executable_OptimizedProgram_Args a;
  memset(&a, 0, sizeof a);
  a.struct_size = PJRT_Executable_OptimizedProgram_Args_STRUCT_SIZE;
  a.executable = g.executable;
  a.program = &p;
  err = api->PJRT_Executable_OptimizedProgram(&a);
  if (err == NULL) {
    p.code = (char*)malloc(p.code_size > 0 ? p.code_size : 1);
    if (p.code == NULL) {
      p.code_size = 0;
    } else {
      err = api->PJRT_Executable_OptimizedProgram(&a);
    }
    if (err == NULL) {
      *out = p.code;
      *size = p.code_size;
      if (format_cap > 0 && p.format != NULL) {
        size_t n = p.format_size < format_cap - 1 ? p.format_size : format_cap - 1;
        memcpy(format, p.format, n);
        format[n] = 0;
      }
    } else {
      free(p.code);
    }
  }
  PJRT_Executable_Destroy_Args d;
  memset(&d, 0, sizeof d);
  d.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE;
  d.executable = g.executable;
  PJRT_Error* derr = api->PJRT_Executable_Destroy(&d);
  if (derr != NULL) {
    int code;
    free(gp_error_take(api, derr, &code));
  }
  return err;
}
