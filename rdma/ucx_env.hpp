// ucx_env: the UCX environment defaults ferry runs with.
// Owns: the list of UCX variables ferry sets when the user has not, and the
// reason for each. UCX reads its environment inside ucp_init (through
// ucp_config_read), so the defaults must be in place before a context exists.
// Must never: overwrite a variable the user already set, or be called while
// other threads may read the environment (setenv is not thread-safe).
#pragma once

namespace ferry {

/// Sets, only where unset:
///  - UCX_RCACHE_ENABLE=n: no registration cache, so an unmap really unmaps
///    and the registered-bytes budget counts what is registered;
///  - UCX_MEM_EVENTS=n: UCX installs no malloc/munmap hooks in the process.
/// ucx_context::create calls it; calling it again is harmless.
void apply_ucx_defaults();

} // namespace ferry
