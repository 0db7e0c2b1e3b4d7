// device_exposures: the device ranges a node exposes to remote staging, and
// the exclusive loans sessions hold on parts of them. Plain data (one
// mutex; no native calls): the user's thread exposes and withdraws, the
// staging source checks a Pin against it and lends.
//   expose(range)          -> a registration id (never 0, never reused)
//   lend(pin, session)     -> the range to copy, after the Pin's checks in
//                             order: registration, range, permission, and
//                             no overlap with another session's loan on the
//                             same device bytes (whichever exposure)
//   lend_local(range)      -> a loan id: a requester session's exclusive
//                             loan on its own device range (no exposure
//                             needed), refused on overlap as above
//   give_back(session)     the session ended (its copies drained)
//   withdraw(id)           refused while a session holds a loan on it
// The allocation's actual type is checked by the session, with CUDA.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>

#include <caf/expected.hpp>

#include "protocol/remote_staging_wire.hpp"
#include "staging/cuda_api.hpp"

namespace ferry::staging {

enum class device_access : uint8_t { read = 1, write = 2, read_write = 3 };

/// "read", "write" or "read_write".
const char* to_string(device_access a);

struct device_exposure {
  int device = 0;
  device_ptr base = 0;
  uint64_t bytes = 0;
  device_access access = device_access::read;
};

/// What a session may touch: [base + offset, + length) on `device`.
struct device_loan {
  uint64_t registration = 0;
  int device = 0;
  device_ptr start = 0; // base + offset
  uint64_t length = 0;
};

class device_exposures {
public:
  uint64_t expose(const device_exposure& e);
  caf::error withdraw(uint64_t registration);
  caf::expected<device_loan> lend(const stage_pin& pin, uint64_t session);
  caf::expected<uint64_t> lend_local(int device, device_ptr start, uint64_t length);
  void give_back(uint64_t session);
  size_t exposed() const;
  size_t loans() const;

private:
  /// Whether a loan covers any of [start, + length) on `device`.
  bool overlaps(int device, device_ptr start, uint64_t length) const;

  struct loan_rec {
    uint64_t registration;
    int device;
    device_ptr start;
    uint64_t length;
  };
  mutable std::mutex mu_;
  std::map<uint64_t, device_exposure> exposures_;
  std::map<uint64_t, loan_rec> loans_; // by session
  uint64_t next_ = 1;
  uint64_t next_local_ = 1; // local loans are keyed local_loan_bit | n
};

/// Marks a requester's own loan (source sessions' ids stay below it).
inline constexpr uint64_t local_loan_bit = uint64_t{1} << 63;

} // namespace ferry::staging
