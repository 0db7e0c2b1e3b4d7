// The UCX transports the two-process RDMA tests run over, by test
// parameter: what UCX_TLS is set to in every process of a test.
#pragma once

#include <cstdlib>
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

/// Lets every node of the test (this process and the ones it starts, which
/// inherit its environment) take GETs UCX emulates over tcp
/// (FERRY_RDMA_EMULATED_GETS, --rdma-emulated-gets) when the test runs on
/// "tcp": there tcp stands in for a NIC, which these machines lack. By
/// default a tcp pair takes the chunked path (the EmulatedGets tests).
inline void allow_emulated_gets_for(const std::string& name) {
  if (name == "tcp")
    ::setenv("FERRY_RDMA_EMULATED_GETS", "1", 1);
  else
    ::unsetenv("FERRY_RDMA_EMULATED_GETS");
}

} // namespace ferry::test
