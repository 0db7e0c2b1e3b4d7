// chunk_bytes: one chunk of a chunked transfer, as the owner answers a pull.
// On the owner it is a read-only view of a plain staged payload that keeps
// the payload's memory alive, so answering a pull copies nothing: CAF's
// serializer reads the bytes straight from the slot (registered memory,
// whose lifetime a slot does not own, is copied into a chunk instead). On
// the consumer it owns a buffer the deserializer fills without zeroing it
// first. Between actors
// of one node the view itself arrives: no copy at all. On the control
// channel (UCX active messages) a chunk is a view of UCX's own receive
// buffer, given back to UCX when the last view goes: copy it out, never
// keep it longer than writing it takes.
// On the wire it is a byte sequence (length, then the raw bytes).
// Must never: be written through; the viewed memory must not change while
// any chunk_bytes refers to it (staged payloads are immutable).
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>

#include <caf/deserializer.hpp>
#include <caf/error.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/serializer.hpp>

#include "protocol/bounded_bytes.hpp"

namespace ferry {

class chunk_bytes {
public:
  chunk_bytes() = default;

  /// Views [data, data + size), kept alive by `keep_alive`.
  static chunk_bytes view(std::shared_ptr<const void> keep_alive, const char* data,
                          size_t size);

  /// A fresh, uninitialised buffer of `size` bytes that `fill` writes into.
  static chunk_bytes allocate(size_t size, char** fill);

  const char* data() const noexcept { return data_; }
  size_t size() const noexcept { return size_; }
  // No begin()/end(): CAF 0.17 would take an iterable type for a container.

  /// The wire form: CAF's byte-sequence layout, read from the viewed memory.
  caf::error save(caf::serializer& sink) const;
  /// Reads the wire form. A stated length beyond the bytes the message holds
  /// is an error before anything of that length is allocated.
  caf::error load(caf::deserializer& source);

private:
  std::shared_ptr<const void> keep_alive_;
  const char* data_ = nullptr;
  size_t size_ = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, chunk_bytes& x) {
  // e.g. to_string: the size, not the bytes
  return inspect_by_save_load(f, x, [&](Inspector& g) {
    return g(caf::meta::type_name("ferry::chunk_bytes"), x.size());
  });
}

} // namespace ferry
