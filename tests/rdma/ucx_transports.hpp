// The UCX transports the two-process RDMA tests run over, by test
// parameter: what UCX_TLS is set to in every process of a test.
#pragma once

#include <string>

namespace ferry::test {

/// "tcp": UCX over tcp alone; "posix": the shared-memory transport whose
/// remapped arenas can repeat their key bytes; anything else ("sm"): the
/// shared-memory transports UCX picks.
inline std::string ucx_tls_for(const std::string& name) {
  if (name == "tcp")
    return "tcp,self";
  if (name == "posix")
    return "posix,cma,self";
  return "sm,self";
}

} // namespace ferry::test
