#include "actors/staging/remote_staging_stats.hpp"

#include <nlohmann/json.hpp>

namespace ferry {

std::string remote_staging_stats::json() const {
  nlohmann::json j;
  j["source"] = {{"active", source_active.load()},
                 {"slots", source_slots.load()},
                 {"pins", pins.load()},
                 {"pins_refused", pins_refused.load()},
                 {"delegates", delegates.load()},
                 {"max_in_flight", max_in_flight.load()},
                 {"bytes", source_bytes.load()},
                 {"unpinned", source_unpinned.load()},
                 {"abandoned", source_abandoned.load()},
                 {"retained_chunks", source_retained.load()},
                 {"ucx_sessions", source_ucx_sessions.load()},
                 {"ucx_bytes", source_ucx_bytes.load()}};
  j["requester"] = {{"shards", shards.load()},
                    {"active", active.load()},
                    {"queued", queued.load()},
                    {"cancelled", cancelled.load()},
                    {"refused", refused.load()},
                    {"completed", completed.load()},
                    {"failed", failed.load()},
                    {"effect_unknown", effect_unknown.load()},
                    {"bytes_read", bytes_read.load()},
                    {"bytes_written", bytes_written.load()},
                    {"ucx_sessions", ucx_sessions.load()},
                    {"ucx_bytes", ucx_bytes.load()},
                    {"max_cross_window", max_cross_window.load()}};
  return j.dump();
}

} // namespace ferry
