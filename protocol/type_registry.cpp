#include "protocol/type_registry.hpp"

#include <caf/message.hpp>

#include <cstdint>
#include <vector>

#include "protocol/chunk_bytes.hpp"
#include "protocol/data_handle.hpp"
#include "protocol/errors.hpp"
#include "protocol/messenger_wire.hpp"
#include "protocol/peer_hello.hpp"
#include "protocol/remote_staging_wire.hpp"

namespace ferry {

void register_protocol_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<data_handle>("ferry::data_handle");
  cfg.add_message_type<std::vector<data_handle>>("ferry::handle_vector");
  cfg.add_message_type<peer_hello>("ferry::peer_hello");
  cfg.add_message_type<chunk_bytes>("ferry::chunk_bytes");
  cfg.add_message_type<std::vector<uint64_t>>("ferry::u64_vector");
  cfg.add_message_type<messenger::envelope>("ferry::messenger::envelope");
  cfg.add_message_type<stage_pin>("ferry::stage_pin");
  cfg.add_message_type<stage_pin_reply>("ferry::stage_pin_reply");
  cfg.add_message_type<stage_frame>("ferry::stage_frame");
  cfg.add_message_type<stage_slot_key>("ferry::stage_slot_key");
  cfg.add_error_category(error_category, [](uint8_t code, caf::atom_value,
                                            const caf::message& ctx) {
    auto text = "ferry: " + to_string(static_cast<errc>(code));
    if (ctx.size() == 1 && ctx.match_element<std::string>(0))
      text += " (" + ctx.get_as<std::string>(0) + ")";
    return text;
  });
}

} // namespace ferry
