#include "actors/messenger/messenger_handlers.hpp"

#include <caf/actor_pool.hpp>
#include <caf/actor_system.hpp>
#include <caf/blocking_actor.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_execution_unit.hpp>

#include "protocol/atoms.hpp"
#include "protocol/errors.hpp"

namespace ferry::messenger {

std::string handler_table::bind(const std::string& name, handler h) {
  if (name.empty())
    return "a handler name must not be empty";
  if (name.size() > envelope_limits::max_handler_name)
    return "handler name '" + name.substr(0, 32) + "...' is longer than "
           + std::to_string(envelope_limits::max_handler_name) + " characters";
  if (auto* a = std::get_if<caf::actor>(&h); a && !*a)
    return "handler '" + name + "': no actor given";
  if (!table_.emplace(name, std::move(h)).second)
    return "handler '" + name + "' is already bound on this node";
  return {};
}

bool handler_table::unbind(const std::string& name) {
  return table_.erase(name) > 0;
}

const handler* handler_table::find(const std::string& name) const {
  auto i = table_.find(name);
  return i == table_.end() ? nullptr : &i->second;
}

void handler_table::forget_actor(const caf::actor_addr& who) {
  for (auto i = table_.begin(); i != table_.end();) {
    auto* a = std::get_if<caf::actor>(&i->second);
    if (a && a->address() == who)
      i = table_.erase(i);
    else
      ++i;
  }
}

namespace {

caf::error failed_handler(const std::string& what) {
  return make_error(errc::handler_failed, what);
}

/// Gives the payload a unary handler left behind to the warm buffers.
struct give_back_payload {
  warm_buffers* warm;
  envelope& msg;
  ~give_back_payload() {
    if (warm)
      warm->give(std::move(msg.payload));
  }
};

/// One handler thread: runs what it is asked, one call at a time.
caf::behavior handler_thread(caf::event_based_actor*, std::shared_ptr<warm_buffers> warm) {
  return {
    [warm](run_atom, const unary_function_ptr& fn,
           envelope& msg) -> caf::result<envelope> {
      give_back_payload after{warm.get(), msg}; // once the handler is done
      try {
        auto out = (*fn)(msg);
        if (!out)
          return std::move(out.error());
        return std::move(*out);
      } catch (const std::exception& e) {
        return failed_handler(std::string{"the handler threw: "} + e.what());
      }
    },
    [](open_atom, const stream_function_ptr& fn,
       envelope& msg) -> caf::result<item_source_ptr> {
      try {
        auto out = (*fn)(msg);
        if (!out)
          return std::move(out.error());
        if (!*out)
          return failed_handler("the stream handler opened no source");
        return std::move(*out);
      } catch (const std::exception& e) {
        return failed_handler(std::string{"the stream handler threw: "} + e.what());
      }
    },
    [](next_atom, const item_source_ptr& src) -> caf::result<bool, envelope> {
      try {
        auto out = src->next();
        if (!out)
          return std::move(out.error());
        if (!*out)
          return {false, envelope{}};
        return {true, std::move(**out)};
      } catch (const std::exception& e) {
        return failed_handler(std::string{"the stream source threw: "} + e.what());
      }
    },
  };
}

} // namespace

caf::actor spawn_handler_threads(caf::actor_system& sys, size_t threads,
                                 std::shared_ptr<warm_buffers> warm) {
  caf::scoped_execution_unit context{&sys};
  return caf::actor_pool::make(
    &context, threads == 0 ? 1 : threads,
    [&sys, &warm] { return sys.spawn<caf::detached>(handler_thread, warm); },
    caf::actor_pool::round_robin());
}

} // namespace ferry::messenger
