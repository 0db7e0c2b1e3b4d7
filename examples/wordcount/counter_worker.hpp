// counter_worker: the example's own worker actor type. Asked
// (count_atom, data_handle), it pulls the shard by handle from its owner
// (through the node's consumer service), counts its words and replies them
// as JSON text ({"word": count, ...}), then releases the shard.
#pragma once

#include <map>
#include <string>

#include <ferry/ferry.hpp>

namespace wordcount {

using count_atom = caf::atom_constant<caf::atom("wc_count")>;

constexpr const char* counter_type = "wordcount.counter";

/// The registry entry a node needs to spawn counters on request.
ferry::worker_registry counter_workers();

/// Words of `text` (separated by spaces) and how often each occurs.
std::map<std::string, uint64_t> count_words(const char* text, size_t size);

} // namespace wordcount
