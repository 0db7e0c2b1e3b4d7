// Local-only message types of the RDMA path (pinned blocks travel between a
// node's own actors, never across nodes) and the atoms that carry them.
#pragma once

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>

#include "rdma/external_region.hpp"
#include "rdma/pinned_block.hpp"

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(ferry::pinned_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(ferry::external_region_ptr)

namespace ferry {

using pool_alloc_atom = caf::atom_constant<caf::atom("pool_alloc")>;
using pool_free_atom = caf::atom_constant<caf::atom("pool_free")>;
using ucx_peer_atom = caf::atom_constant<caf::atom("ucx_peer")>;
using ucx_get_atom = caf::atom_constant<caf::atom("ucx_get")>;
using ucx_hold_atom = caf::atom_constant<caf::atom("ucx_hold")>;
using ucx_retire_atom = caf::atom_constant<caf::atom("ucx_retire")>;
using region_register_atom = caf::atom_constant<caf::atom("reg_region")>;
using region_unregister_atom = caf::atom_constant<caf::atom("unreg_reg")>;
using region_stage_atom = caf::atom_constant<caf::atom("stage_reg")>;
using drain_atom = caf::atom_constant<caf::atom("drain")>;
using poll_atom = caf::atom_constant<caf::atom("poll")>;
using pool_unmap_all_atom = caf::atom_constant<caf::atom("unmap_all")>;

} // namespace ferry
