#include "staging/cuda_driver.hpp"

#include <cstdlib>

#include "protocol/errors.hpp"

#ifdef FERRY_WITH_CUDA
#include <dlfcn.h>

#include <cuda.h>
#endif

namespace ferry::staging {

namespace {

/// The api of a machine where staging is off: every call says why.
class unavailable_cuda : public cuda_api {
public:
  explicit unavailable_cuda(std::string why) : why_(std::move(why)) {}
  std::string unavailable_reason() const override { return why_; }
  const char* backend() const override { return "driver"; }
  caf::expected<int> device_count() override { return off(); }
  caf::expected<std::string> pci_bus_id(int) override { return off(); }
  caf::expected<cuda_context> retain_context(int) override { return off(); }
  caf::error release_context(int) override { return off(); }
  caf::error push_context(cuda_context) override { return off(); }
  caf::error pop_context() override { return off(); }
  caf::error host_register(void*, size_t) override { return off(); }
  caf::error host_unregister(void*) override { return off(); }
  caf::expected<cuda_stream> stream_create() override { return off(); }
  caf::error stream_destroy(cuda_stream) override { return off(); }
  caf::expected<cuda_event> event_create() override { return off(); }
  caf::error event_destroy(cuda_event) override { return off(); }
  caf::error event_record(cuda_event, cuda_stream) override { return off(); }
  caf::expected<event_state> event_query(cuda_event) override { return off(); }
  caf::error copy_to_host(void*, device_ptr, size_t, cuda_stream) override { return off(); }
  caf::error copy_to_device(device_ptr, const void*, size_t, cuda_stream) override {
    return off();
  }
  caf::expected<device_ptr> mem_alloc(size_t) override { return off(); }
  caf::error mem_free(device_ptr) override { return off(); }
  caf::expected<memory_kind> memory_kind_of(device_ptr, size_t) override { return off(); }

private:
  caf::error off() const { return make_error(errc::staging_unavailable, why_); }
  std::string why_;
};

#ifdef FERRY_WITH_CUDA

/// The driver entry points ferry uses, by their exported (versioned) names.
struct driver_table {
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuGetErrorName) error_name = nullptr;
  decltype(&::cuDeviceGetCount) device_count = nullptr;
  decltype(&::cuDeviceGet) device_get = nullptr;
  decltype(&::cuDeviceGetPCIBusId) pci_bus_id = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) ctx_retain = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease_v2) ctx_release = nullptr;
  decltype(&::cuCtxPushCurrent_v2) ctx_push = nullptr;
  decltype(&::cuCtxPopCurrent_v2) ctx_pop = nullptr;
  decltype(&::cuMemHostRegister_v2) host_register = nullptr;
  decltype(&::cuMemHostUnregister) host_unregister = nullptr;
  decltype(&::cuStreamCreate) stream_create = nullptr;
  decltype(&::cuStreamDestroy_v2) stream_destroy = nullptr;
  decltype(&::cuEventCreate) event_create = nullptr;
  decltype(&::cuEventDestroy_v2) event_destroy = nullptr;
  decltype(&::cuEventRecord) event_record = nullptr;
  decltype(&::cuEventQuery) event_query = nullptr;
  decltype(&::cuMemcpyDtoHAsync_v2) copy_d2h = nullptr;
  decltype(&::cuMemcpyHtoDAsync_v2) copy_h2d = nullptr;
  decltype(&::cuMemAlloc_v2) mem_alloc = nullptr;
  decltype(&::cuMemFree_v2) mem_free = nullptr;
  decltype(&::cuPointerGetAttribute) pointer_attribute = nullptr;
};

/// Resolves every entry point; the name of the first one missing, if any.
std::string resolve(void* lib, driver_table& t) {
  auto get = [lib](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
    return fn != nullptr;
  };
  if (!get(t.init, "cuInit")) return "cuInit";
  if (!get(t.error_name, "cuGetErrorName")) return "cuGetErrorName";
  if (!get(t.device_count, "cuDeviceGetCount")) return "cuDeviceGetCount";
  if (!get(t.device_get, "cuDeviceGet")) return "cuDeviceGet";
  if (!get(t.pci_bus_id, "cuDeviceGetPCIBusId")) return "cuDeviceGetPCIBusId";
  if (!get(t.ctx_retain, "cuDevicePrimaryCtxRetain")) return "cuDevicePrimaryCtxRetain";
  if (!get(t.ctx_release, "cuDevicePrimaryCtxRelease_v2")) return "cuDevicePrimaryCtxRelease_v2";
  if (!get(t.ctx_push, "cuCtxPushCurrent_v2")) return "cuCtxPushCurrent_v2";
  if (!get(t.ctx_pop, "cuCtxPopCurrent_v2")) return "cuCtxPopCurrent_v2";
  if (!get(t.host_register, "cuMemHostRegister_v2")) return "cuMemHostRegister_v2";
  if (!get(t.host_unregister, "cuMemHostUnregister")) return "cuMemHostUnregister";
  if (!get(t.stream_create, "cuStreamCreate")) return "cuStreamCreate";
  if (!get(t.stream_destroy, "cuStreamDestroy_v2")) return "cuStreamDestroy_v2";
  if (!get(t.event_create, "cuEventCreate")) return "cuEventCreate";
  if (!get(t.event_destroy, "cuEventDestroy_v2")) return "cuEventDestroy_v2";
  if (!get(t.event_record, "cuEventRecord")) return "cuEventRecord";
  if (!get(t.event_query, "cuEventQuery")) return "cuEventQuery";
  if (!get(t.copy_d2h, "cuMemcpyDtoHAsync_v2")) return "cuMemcpyDtoHAsync_v2";
  if (!get(t.copy_h2d, "cuMemcpyHtoDAsync_v2")) return "cuMemcpyHtoDAsync_v2";
  if (!get(t.mem_alloc, "cuMemAlloc_v2")) return "cuMemAlloc_v2";
  if (!get(t.mem_free, "cuMemFree_v2")) return "cuMemFree_v2";
  if (!get(t.pointer_attribute, "cuPointerGetAttribute")) return "cuPointerGetAttribute";
  return {};
}

class driver_cuda : public cuda_api {
public:
  driver_cuda(void* lib, driver_table t) : lib_(lib), t_(t) {}
  ~driver_cuda() override = default; // the library stays loaded: handles may outlive us

  std::string unavailable_reason() const override { return {}; }
  const char* backend() const override { return "driver"; }

  /// `call`'s result as an error naming it (none on success).
  caf::error check(CUresult r, const char* call) const {
    if (r == CUDA_SUCCESS)
      return {};
    return make_error(errc::cuda_error, std::string{call} + ": " + name_of(r));
  }
  std::string name_of(CUresult r) const {
    const char* n = nullptr;
    if (t_.error_name && t_.error_name(r, &n) == CUDA_SUCCESS && n)
      return n;
    return "CUresult " + std::to_string(static_cast<int>(r));
  }

  caf::expected<int> device_count() override {
    int n = 0;
    if (auto err = check(t_.device_count(&n), "cuDeviceGetCount"))
      return err;
    return n;
  }
  caf::expected<std::string> pci_bus_id(int device) override {
    CUdevice d;
    if (auto err = check(t_.device_get(&d, device), "cuDeviceGet"))
      return err;
    char id[32] = {};
    if (auto err = check(t_.pci_bus_id(id, sizeof id, d), "cuDeviceGetPCIBusId"))
      return err;
    return std::string{id};
  }
  caf::expected<cuda_context> retain_context(int device) override {
    CUdevice d;
    if (auto err = check(t_.device_get(&d, device), "cuDeviceGet"))
      return err;
    CUcontext c = nullptr;
    if (auto err = check(t_.ctx_retain(&c, d), "cuDevicePrimaryCtxRetain"))
      return err;
    return reinterpret_cast<cuda_context>(c);
  }
  caf::error release_context(int device) override {
    CUdevice d;
    if (auto err = check(t_.device_get(&d, device), "cuDeviceGet"))
      return err;
    return check(t_.ctx_release(d), "cuDevicePrimaryCtxRelease");
  }
  caf::error push_context(cuda_context ctx) override {
    return check(t_.ctx_push(reinterpret_cast<CUcontext>(ctx)), "cuCtxPushCurrent");
  }
  caf::error pop_context() override {
    CUcontext c = nullptr;
    return check(t_.ctx_pop(&c), "cuCtxPopCurrent");
  }
  caf::error host_register(void* ptr, size_t bytes) override {
    return check(t_.host_register(ptr, bytes, CU_MEMHOSTREGISTER_PORTABLE),
                 "cuMemHostRegister");
  }
  caf::error host_unregister(void* ptr) override {
    return check(t_.host_unregister(ptr), "cuMemHostUnregister");
  }
  caf::expected<cuda_stream> stream_create() override {
    CUstream s = nullptr;
    if (auto err = check(t_.stream_create(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate"))
      return err;
    return reinterpret_cast<cuda_stream>(s);
  }
  caf::error stream_destroy(cuda_stream s) override {
    return check(t_.stream_destroy(reinterpret_cast<CUstream>(s)), "cuStreamDestroy");
  }
  caf::expected<cuda_event> event_create() override {
    CUevent e = nullptr;
    if (auto err = check(t_.event_create(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate"))
      return err;
    return reinterpret_cast<cuda_event>(e);
  }
  caf::error event_destroy(cuda_event e) override {
    return check(t_.event_destroy(reinterpret_cast<CUevent>(e)), "cuEventDestroy");
  }
  caf::error event_record(cuda_event e, cuda_stream s) override {
    return check(t_.event_record(reinterpret_cast<CUevent>(e), reinterpret_cast<CUstream>(s)),
                 "cuEventRecord");
  }
  caf::expected<event_state> event_query(cuda_event e) override {
    auto r = t_.event_query(reinterpret_cast<CUevent>(e));
    if (r == CUDA_ERROR_NOT_READY)
      return event_state::not_ready;
    if (auto err = check(r, "cuEventQuery"))
      return err;
    return event_state::complete;
  }
  caf::error copy_to_host(void* dst, device_ptr src, size_t bytes, cuda_stream s) override {
    return check(t_.copy_d2h(dst, static_cast<CUdeviceptr>(src), bytes,
                             reinterpret_cast<CUstream>(s)),
                 "cuMemcpyDtoHAsync");
  }
  caf::error copy_to_device(device_ptr dst, const void* src, size_t bytes,
                            cuda_stream s) override {
    return check(t_.copy_h2d(static_cast<CUdeviceptr>(dst), src, bytes,
                             reinterpret_cast<CUstream>(s)),
                 "cuMemcpyHtoDAsync");
  }
  caf::expected<device_ptr> mem_alloc(size_t bytes) override {
    CUdeviceptr p = 0;
    if (auto err = check(t_.mem_alloc(&p, bytes), "cuMemAlloc"))
      return err;
    return static_cast<device_ptr>(p);
  }
  caf::error mem_free(device_ptr p) override {
    return check(t_.mem_free(static_cast<CUdeviceptr>(p)), "cuMemFree");
  }
  caf::expected<memory_kind> memory_kind_of(device_ptr p, size_t bytes) override {
    auto ptr = static_cast<CUdeviceptr>(p);
    unsigned int type = 0;
    auto r = t_.pointer_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr);
    if (r == CUDA_ERROR_INVALID_VALUE)
      return memory_kind::unknown; // not memory CUDA knows
    if (auto err = check(r, "cuPointerGetAttribute(MEMORY_TYPE)"))
      return err;
    if (type != CU_MEMORYTYPE_DEVICE)
      return memory_kind::host;
    CUdeviceptr start = 0;
    size_t size = 0;
    if (auto err = check(t_.pointer_attribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, ptr),
                         "cuPointerGetAttribute(RANGE_START_ADDR)"))
      return err;
    if (auto err = check(t_.pointer_attribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, ptr),
                         "cuPointerGetAttribute(RANGE_SIZE)"))
      return err;
    if (ptr < start || ptr - start > size || bytes > size - (ptr - start))
      return memory_kind::unknown; // the range leaves its allocation
    return memory_kind::device;
  }

private:
  void* lib_;
  driver_table t_;
};

#endif // FERRY_WITH_CUDA

} // namespace

std::unique_ptr<cuda_api> load_cuda_driver(const std::string& library) {
#ifdef FERRY_WITH_CUDA
  std::string path = library;
  if (path.empty()) {
    const char* env = std::getenv("FERRY_CUDA_DRIVER");
    path = env && *env ? env : "libcuda.so.1";
  }
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    return std::make_unique<unavailable_cuda>("no CUDA driver (" + path
                                              + "): " + (why ? why : "cannot load"));
  }
  driver_table t;
  if (auto missing = resolve(lib, t); !missing.empty())
    return std::make_unique<unavailable_cuda>("the CUDA driver (" + path + ") lacks "
                                              + missing + ": too old");
  if (auto r = t.init(0); r != CUDA_SUCCESS) {
    const char* n = nullptr;
    std::string name = t.error_name(r, &n) == CUDA_SUCCESS && n
                         ? n : "CUresult " + std::to_string(static_cast<int>(r));
    return std::make_unique<unavailable_cuda>("cuInit: " + name + " (" + path + ")");
  }
  int devices = 0;
  if (t.device_count(&devices) != CUDA_SUCCESS || devices == 0)
    return std::make_unique<unavailable_cuda>("no CUDA device (" + path + ")");
  return std::make_unique<driver_cuda>(lib, t);
#else
  (void) library;
  return std::make_unique<unavailable_cuda>("ferry was built without the CUDA toolkit");
#endif
}

} // namespace ferry::staging
