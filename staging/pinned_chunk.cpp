#include "staging/pinned_chunk.hpp"

#include "protocol/errors.hpp"

namespace ferry::staging {

namespace {

/// Undoes what exists of `c` with its context current, in order (event,
/// stream, registration), stopping at the first step that fails: what
/// comes after it may still be in use. True when all of it went (the
/// caller pops the context and unmaps).
bool undo_native(cuda_api& api, pinned_chunk& c, caf::error* why) {
  auto step = [&](caf::error err) {
    if (err && why && !*why)
      *why = std::move(err);
    return !err;
  };
  for (auto& e : c.events) {
    if (e == 0)
      continue;
    if (!step(api.event_destroy(e)))
      return false;
    e = 0;
  }
  if (c.stream != 0) {
    if (!step(api.stream_destroy(c.stream)))
      return false;
    c.stream = 0;
  }
  if (c.registered) {
    if (!step(api.host_unregister(c.data())))
      return false;
    c.registered = false;
  }
  return true;
}

} // namespace

chunk_made make_pinned_chunk(cuda_api& api, const chunk_key& key, size_t bytes) {
  chunk_made out;
  auto mapping = bound_mapping::map(bytes, key.node);
  if (!mapping) {
    out.error = std::move(mapping.error());
    return out; // nothing made
  }
  auto c = std::make_shared<pinned_chunk>();
  c->key = key;
  c->memory = std::move(*mapping);
  c->bytes = bytes;
  if (auto err = api.push_context(key.ctx)) {
    out.error = std::move(err);
    return out; // the mapping goes with c
  }
  caf::error failed;
  if (auto err = api.host_register(c->data(), c->memory.size()))
    failed = std::move(err);
  else
    c->registered = true;
  if (!failed) {
    if (auto s = api.stream_create())
      c->stream = *s;
    else
      failed = std::move(s.error());
  }
  for (auto& slot : c->events) {
    if (failed)
      break;
    if (auto e = api.event_create())
      slot = *e;
    else
      failed = std::move(e.error());
  }
  bool clean = true;
  if (failed)
    clean = undo_native(api, *c, nullptr);
  bool popped = !api.pop_context();
  if (!failed && popped) {
    out.outcome = chunk_pool::outcome::ok;
    out.chunk = std::move(c);
    return out;
  }
  bool clean_failure = failed && clean && popped; // nothing of it is left
  out.error = failed ? std::move(failed)
                     : caf::error{make_error(errc::cuda_error, "pop_context after a new chunk")};
  if (!clean_failure) {
    c->memory.leak(); // a registration may remain: never unmap under it
    out.outcome = chunk_pool::outcome::failed_uncertain;
    out.chunk = std::move(c);
  }
  return out;
}

chunk_pool::outcome release_pinned_chunk(cuda_api& api, pinned_chunk& c, caf::error* why) {
  if (auto err = api.push_context(c.key.ctx)) {
    if (why)
      *why = std::move(err);
    c.memory.leak();
    return chunk_pool::outcome::failed_uncertain;
  }
  bool clean = undo_native(api, c, why);
  auto pop = api.pop_context();
  if (!clean || pop) {
    if (pop && why && !*why)
      *why = std::move(pop);
    c.memory.leak();
    return chunk_pool::outcome::failed_uncertain;
  }
  c.memory.unmap();
  return chunk_pool::outcome::ok;
}

} // namespace ferry::staging
