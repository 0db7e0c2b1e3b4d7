// libFuzzer target: a data_handle's three forms from peer bytes: its text
// form (parse_data_handle), its MessagePack map {hi, lo}, and its JSON
// object. Aborts when an accepted form does not round-trip; an exception
// escaping, or an allocation of a size the bytes state (past the RSS
// limit), fails the run too.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <msgpack.hpp>
#include <nlohmann/json.hpp>

#include "protocol/data_handle.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using ferry::data_handle;
  std::string_view text{reinterpret_cast<const char*>(data), size};
  if (auto h = ferry::parse_data_handle(text)) {
    auto back = ferry::parse_data_handle(ferry::to_string(*h));
    if (!back || *back != *h)
      std::abort();
  }
  if (auto h = ferry::unpack_data_handle(reinterpret_cast<const char*>(data), size)) {
    msgpack::sbuffer buf;
    msgpack::pack(buf, *h);
    auto again = ferry::unpack_data_handle(buf.data(), buf.size());
    if (!again || *again != *h)
      std::abort();
  }
  try {
    auto j = nlohmann::json::parse(text.begin(), text.end());
    data_handle h;
    ferry::from_json(j, h);
    nlohmann::json out;
    ferry::to_json(out, h);
    data_handle back;
    ferry::from_json(out, back);
    if (back != h)
      std::abort();
  } catch (const std::exception&) {
    // nlohmann's parse and type errors, and from_json's refusals
  }
  return 0;
}
