// The example distributed job's messages. The coordinator calls each
// worker's named handler with a shard as the payload; the worker sorts it
// and replies the sorted shard with its statistics in headers. The shards
// go by handle without any handle code here: the messenger stages payloads
// above its threshold and fetches them before a handler runs.
#pragma once

#include <optional>
#include <string>

#include "apps/shard_math.hpp"
#include "protocol/messenger_wire.hpp"

namespace ferry::app {

/// The name gateways spawn the job's worker under. The spawn's one
/// argument is the handler name the worker binds on its node's messenger.
constexpr const char* sort_worker_name = "sort_worker";

constexpr size_t histogram_bins = 256; // by the top byte of each value

/// The statistics of a sorted shard as reply headers (count, sum, and the
/// histogram as comma-separated counts).
void put_stats(messenger::headers& h, const shard_stats& s);

/// The statistics back from reply headers; none when any is missing or
/// malformed.
std::optional<shard_stats> take_stats(const messenger::headers& h);

} // namespace ferry::app
