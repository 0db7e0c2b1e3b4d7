#include "rdma/ucx_context.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "rdma/one_sided_reads.hpp"
#include "rdma/ucx_env.hpp"

namespace ferry {

namespace {

// UCX 1.13 has no query for the resources a context selected; its info
// printer lists them as "#  resource 3  :  md 3  dev 2  flags -- posix/memory".
// This reads that text back. A format change only loses the list (the
// context still works); it never fails creation.
std::vector<ucx_transport> read_transports(ucp_context_h ctx) {
  std::vector<ucx_transport> out;
  char* buf = nullptr;
  size_t len = 0;
  FILE* f = ::open_memstream(&buf, &len);
  if (f == nullptr)
    return out;
  ucp_context_print_info(ctx, f);
  std::fclose(f);
  std::istringstream in(std::string(buf, len));
  std::free(buf);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("resource") == std::string::npos)
      continue;
    auto end = line.find_last_not_of(" \t\r");
    if (end == std::string::npos)
      continue;
    auto begin = line.find_last_of(" \t", end);
    std::string token = line.substr(begin == std::string::npos ? 0 : begin + 1,
                                    end + 1 - (begin == std::string::npos ? 0 : begin + 1));
    auto slash = token.find('/');
    if (slash == std::string::npos || slash == 0)
      continue;
    out.push_back(ucx_transport{token.substr(0, slash), token.substr(slash + 1)});
  }
  return out;
}

} // namespace

ucx_result<ucx_context> ucx_context::create(const ucx_context_config& cfg) {
  if (cfg.apply_defaults)
    apply_ucx_defaults();
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK)
    return make_ucx_error("ucp_config_read", st);
  ucp_params_t params;
  std::memset(&params, 0, sizeof(params));
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP;
  if (cfg.active_messages)
    params.features |= UCP_FEATURE_AM;
  if (cfg.estimated_num_eps > 0) {
    params.field_mask |= UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
    params.estimated_num_eps = cfg.estimated_num_eps;
  }
  ucp_context_h raw = nullptr;
  st = ucp_init(&params, config, &raw);
  ucp_config_release(config);
  if (st != UCS_OK)
    return make_ucx_error("ucp_init", st);

  ucx_context out;
  out.ctx_ = ucx_context_ptr(raw, [](ucp_context_h c) { ucp_cleanup(c); });
  ucp_context_attr_t attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.field_mask = UCP_ATTR_FIELD_REQUEST_SIZE;
  if (ucp_context_query(raw, &attr) == UCS_OK)
    out.request_size_ = attr.request_size;
  out.transports_ = read_transports(raw);
  return out;
}

bool ucx_context::has_transport(std::string_view name) const noexcept {
  for (const auto& t : transports_)
    if (t.name == name)
      return true;
  return false;
}

bool ucx_context::has_shared_memory() const noexcept {
  return has_transport("posix") || has_transport("sysv") || has_transport("cma")
         || has_transport("knem") || has_transport("xpmem");
}

bool ucx_context::has_nic_rma() const noexcept {
  for (const auto& t : transports_)
    if (is_nic_rma_transport(t.name))
      return true;
  return false;
}

bool ucx_context::prefers_ucx_allocation() const noexcept {
  return has_transport("posix") || has_transport("sysv") || has_transport("xpmem");
}

bool ucx_context::registers_without_pinning() const noexcept {
  for (const auto& t : transports_)
    if (t.name != "self" && t.name != "tcp" && t.name != "posix" && t.name != "sysv"
        && t.name != "cma" && t.name != "knem" && t.name != "xpmem")
      return false;
  return !transports_.empty();
}

std::string ucx_context::describe_transports() const {
  std::string out;
  for (const auto& t : transports_) {
    if (!out.empty())
      out += ' ';
    out += t.name;
    out += '/';
    out += t.device;
  }
  return out;
}

} // namespace ferry
