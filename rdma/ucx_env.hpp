// ucx_env: the UCX environment defaults ferry runs with.
// Owns: the UCX settings ferry applies when the user has not chosen, and the
// reason for each. UCX reads UCP variables inside ucp_init (through
// ucp_config_read), so the defaults must be in place before a context exists.
// Must never: overwrite a variable the user set, or be called while other
// threads may read the environment (setenv is not thread-safe).
#pragma once

namespace ferry {

/// Applies, only where the user has not set the variable:
///  - UCX_RCACHE_ENABLE=n (setenv, overwrite 0): no registration cache, so
///    an unmap really unmaps and the registered-bytes budget counts what is
///    registered.
///  - UCX_MEM_EVENTS=n: UCX installs no malloc/munmap hooks. This variable
///    belongs to UCM, which libucs parses once, when it is loaded — before
///    main. A setenv here would be ignored (and makes UCX warn "unused env
///    variable"), so the same setting goes to the loaded UCM through
///    ucm_set_global_opts instead. Set UCX_MEM_EVENTS before the process
///    starts to choose otherwise.
/// ucx_context::create calls it; calling it again is harmless.
void apply_ucx_defaults();

} // namespace ferry
