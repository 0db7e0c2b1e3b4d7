#include "protocol/rv_messages.hpp"

#include <algorithm>

#include "protocol/errors.hpp"
#include "protocol/json_fields.hpp"

namespace ferry {

using nlohmann::json;
using detail::body_error;
using detail::optional_bool;
using detail::optional_u64;
using detail::required_object;
using detail::required_u64;

namespace {

std::string dump(const json& j) {
  return j.dump();
}

data_handle read_handle(const json& j) {
  data_handle h;
  from_json(required_object(j, "handle"), h);
  return h;
}

std::string hex_encode(const std::vector<uint8_t>& bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (auto b : bytes) {
    out.push_back(digits[b >> 4]);
    out.push_back(digits[b & 0xF]);
  }
  return out;
}

std::vector<uint8_t> hex_decode(const json& j, const char* key) {
  auto i = j.find(key);
  if (i == j.end() || !i->is_string())
    throw body_error(std::string{"missing string '"} + key + "'");
  const auto& s = i->get_ref<const std::string&>();
  if (s.size() % 2 != 0)
    throw body_error(std::string{"field '"} + key + "' has odd hex length");
  auto nibble = [&](char c) -> uint8_t {
    if (c >= '0' && c <= '9')
      return static_cast<uint8_t>(c - '0');
    if (c >= 'a' && c <= 'f')
      return static_cast<uint8_t>(c - 'a' + 10);
    if (c >= 'A' && c <= 'F')
      return static_cast<uint8_t>(c - 'A' + 10);
    throw body_error(std::string{"field '"} + key + "' is not hex");
  };
  std::vector<uint8_t> out(s.size() / 2);
  for (size_t n = 0; n < out.size(); ++n)
    out[n] = static_cast<uint8_t>(nibble(s[2 * n]) << 4 | nibble(s[2 * n + 1]));
  return out;
}

// One reader per body type; each throws body_error or json::exception.
template <class T>
struct reader;

template <>
struct reader<rv_metadata_request> {
  static rv_metadata_request read(const json& j) {
    return {read_handle(j)};
  }
};

template <>
struct reader<rv_metadata_response> {
  static rv_metadata_response read(const json& j) {
    return {required_u64(j, "total_len"), required_u64(j, "refcount"),
            optional_bool(j, "pinned", false)};
  }
};

template <>
struct reader<rv_acquire_request> {
  static rv_acquire_request read(const json& j) {
    rv_acquire_request x;
    x.handle = read_handle(j);
    if (auto i = j.find("rdma"); i != j.end() && !i->is_null()) {
      if (!i->is_object())
        throw body_error("field 'rdma' must be an object");
      rdma_offer offer;
      if (auto b = i->find("backends"); b != i->end() && !b->is_null()) {
        if (!b->is_array())
          throw body_error("field 'rdma.backends' must be an array");
        for (const auto& name : *b) {
          if (!name.is_string())
            throw body_error("field 'rdma.backends' must hold strings");
          offer.backends.push_back(name.get<std::string>());
        }
      }
      x.rdma = std::move(offer);
    }
    x.lease_ms = std::min(optional_u64(j, "lease_ms", 0), max_wire_duration_ms);
    x.eager_max = optional_u64(j, "eager_max", 0);
    x.holds = optional_bool(j, "holds", false);
    return x;
  }
};

template <>
struct reader<rv_acquire_response> {
  static rv_acquire_response read(const json& j) {
    rv_acquire_response x;
    if (auto i = j.find("ready"); i != j.end()) {
      if (!i->is_object())
        throw body_error("field 'ready' must be an object");
      rv_ready r;
      r.lease_id = required_u64(*i, "lease_id");
      r.transfer_id = required_u64(*i, "transfer_id");
      r.chunk_size = required_u64(*i, "chunk_size");
      r.chunk_count = required_u64(*i, "chunk_count");
      r.total_len = required_u64(*i, "total_len");
      r.eager = optional_bool(*i, "eager", false);
      x.ready = r;
    } else if (auto k = j.find("rdma"); k != j.end()) {
      if (!k->is_object())
        throw body_error("field 'rdma' must be an object");
      rv_rdma_grant g;
      g.lease_id = required_u64(*k, "lease_id");
      g.descriptor = hex_decode(*k, "descriptor");
      g.lease_timeout_ms = std::min(optional_u64(*k, "lease_timeout_ms", 0),
                                    max_wire_duration_ms);
      g.total_len = required_u64(*k, "total_len");
      x.rdma = std::move(g);
    } else {
      throw body_error("acquire answer is neither 'ready' nor 'rdma'");
    }
    return x;
  }
};

template <>
struct reader<rv_pull_request> {
  static rv_pull_request read(const json& j) {
    return {required_u64(j, "transfer_id"), required_u64(j, "index")};
  }
};

template <>
struct reader<rv_ref_request> {
  static rv_ref_request read(const json& j) {
    return {read_handle(j)};
  }
};

template <>
struct reader<rv_ref_response> {
  static rv_ref_response read(const json& j) {
    return {required_u64(j, "refcount")};
  }
};

template <>
struct reader<rv_detach_request> {
  static rv_detach_request read(const json& j) {
    return {read_handle(j), required_u64(j, "lease_id"),
            optional_bool(j, "get_unfinished", false)};
  }
};

template <>
struct reader<rv_release_request> {
  static rv_release_request read(const json& j) {
    return {read_handle(j), required_u64(j, "lease_id"),
            optional_bool(j, "get_unfinished", false)};
  }
};

template <>
struct reader<rv_release_response> {
  static rv_release_response read(const json& j) {
    return {required_u64(j, "refcount"), optional_bool(j, "freed", false)};
  }
};

template <>
struct reader<rv_lease_renew_request> {
  static rv_lease_renew_request read(const json& j) {
    return {read_handle(j), required_u64(j, "lease_id"),
            optional_bool(j, "held", false)};
  }
};

} // namespace

std::string encode(const rv_metadata_request& x) {
  return dump({{"handle", x.handle}});
}

std::string encode(const rv_metadata_response& x) {
  return dump({{"total_len", x.total_len},
               {"refcount", x.refcount},
               {"pinned", x.pinned}});
}

std::string encode(const rv_acquire_request& x) {
  json j{{"handle", x.handle}};
  if (x.rdma)
    j["rdma"] = json{{"backends", x.rdma->backends}};
  if (x.lease_ms != 0)
    j["lease_ms"] = x.lease_ms;
  if (x.eager_max != 0)
    j["eager_max"] = x.eager_max;
  if (x.holds)
    j["holds"] = true;
  return dump(j);
}

std::string encode(const rv_acquire_response& x) {
  if (x.rdma)
    return dump({{"rdma",
                  {{"lease_id", x.rdma->lease_id},
                   {"descriptor", hex_encode(x.rdma->descriptor)},
                   {"lease_timeout_ms", x.rdma->lease_timeout_ms},
                   {"total_len", x.rdma->total_len}}}});
  const auto r = x.ready.value_or(rv_ready{});
  json ready{{"lease_id", r.lease_id},
             {"transfer_id", r.transfer_id},
             {"chunk_size", r.chunk_size},
             {"chunk_count", r.chunk_count},
             {"total_len", r.total_len}};
  if (r.eager)
    ready["eager"] = true;
  return dump({{"ready", std::move(ready)}});
}

std::string encode(const rv_pull_request& x) {
  return dump({{"transfer_id", x.transfer_id}, {"index", x.index}});
}

std::string encode(const rv_ref_request& x) {
  return dump({{"handle", x.handle}});
}

std::string encode(const rv_ref_response& x) {
  return dump({{"refcount", x.refcount}});
}

std::string encode(const rv_detach_request& x) {
  json j{{"handle", x.handle}, {"lease_id", x.lease_id}};
  if (x.get_unfinished)
    j["get_unfinished"] = true;
  return dump(j);
}

std::string encode(const rv_release_request& x) {
  json j{{"handle", x.handle}, {"lease_id", x.lease_id}};
  if (x.get_unfinished)
    j["get_unfinished"] = true;
  return dump(j);
}

std::string encode(const rv_release_response& x) {
  return dump({{"refcount", x.refcount}, {"freed", x.freed}});
}

std::string encode(const rv_lease_renew_request& x) {
  json j{{"handle", x.handle}, {"lease_id", x.lease_id}};
  if (x.held)
    j["held"] = true;
  return dump(j);
}

template <class T>
caf::expected<T> decode(std::string_view body) {
  try {
    auto j = json::parse(body.begin(), body.end());
    if (!j.is_object())
      return make_error(errc::malformed_body, "body is not a JSON object");
    return reader<T>::read(j);
  } catch (const std::exception& e) {
    return make_error(errc::malformed_body, e.what());
  }
}

template caf::expected<rv_metadata_request> decode(std::string_view);
template caf::expected<rv_metadata_response> decode(std::string_view);
template caf::expected<rv_acquire_request> decode(std::string_view);
template caf::expected<rv_acquire_response> decode(std::string_view);
template caf::expected<rv_pull_request> decode(std::string_view);
template caf::expected<rv_ref_request> decode(std::string_view);
template caf::expected<rv_ref_response> decode(std::string_view);
template caf::expected<rv_detach_request> decode(std::string_view);
template caf::expected<rv_release_request> decode(std::string_view);
template caf::expected<rv_release_response> decode(std::string_view);
template caf::expected<rv_lease_renew_request> decode(std::string_view);

} // namespace ferry
