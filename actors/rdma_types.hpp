// Local-only message types of the RDMA path (pinned blocks travel between a
// node's own actors, never across nodes) and the atoms that carry them.
#pragma once

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>

#include "rdma/pinned_block.hpp"

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(ferry::pinned_ptr)

namespace ferry {

using pool_alloc_atom = caf::atom_constant<caf::atom("pool_alloc")>;
using pool_free_atom = caf::atom_constant<caf::atom("pool_free")>;
using ucx_peer_atom = caf::atom_constant<caf::atom("ucx_peer")>;
using ucx_get_atom = caf::atom_constant<caf::atom("ucx_get")>;
using ucx_hold_atom = caf::atom_constant<caf::atom("ucx_hold")>;

} // namespace ferry
