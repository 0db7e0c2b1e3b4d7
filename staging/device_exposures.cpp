#include "staging/device_exposures.hpp"

#include <string>

#include "protocol/errors.hpp"

namespace ferry::staging {

const char* to_string(device_access a) {
  switch (a) {
    case device_access::read: return "read";
    case device_access::write: return "write";
    case device_access::read_write: return "read_write";
  }
  return "none";
}

uint64_t device_exposures::expose(const device_exposure& e) {
  std::lock_guard<std::mutex> g{mu_};
  auto id = next_++;
  exposures_[id] = e;
  return id;
}

caf::error device_exposures::withdraw(uint64_t registration) {
  std::lock_guard<std::mutex> g{mu_};
  if (exposures_.count(registration) == 0)
    return make_error(errc::invalid_argument,
                      "no exposed device range " + std::to_string(registration));
  for (auto& [session, l] : loans_)
    if (l.registration == registration)
      return make_error(errc::resource_exhausted,
                        "device range " + std::to_string(registration)
                          + " is lent to a remote staging session");
  exposures_.erase(registration);
  return {};
}

caf::expected<device_loan> device_exposures::lend(const stage_pin& pin, uint64_t session) {
  std::lock_guard<std::mutex> g{mu_};
  auto i = exposures_.find(pin.registration);
  if (i == exposures_.end())
    return make_error(errc::invalid_argument, "Pin: no exposed device range "
                                                + std::to_string(pin.registration)
                                                + " on this node");
  const auto& e = i->second;
  if (pin.length == 0 || pin.offset > e.bytes || pin.length > e.bytes - pin.offset)
    return make_error(errc::invalid_argument,
                      "Pin: bytes [" + std::to_string(pin.offset) + ", +"
                        + std::to_string(pin.length) + ") are not inside the "
                        + std::to_string(e.bytes) + "-byte range");
  if (pin.direction > static_cast<uint8_t>(stage_direction::write))
    return make_error(errc::protocol_violation, "Pin: unknown direction");
  auto dir = static_cast<stage_direction>(pin.direction);
  auto needs = dir == stage_direction::read ? device_access::read : device_access::write;
  if ((static_cast<uint8_t>(e.access) & static_cast<uint8_t>(needs)) == 0)
    return make_error(errc::invalid_argument,
                      std::string{"Pin: the range allows "} + to_string(e.access)
                        + ", not " + to_string(dir));
  // Exclusive by the device bytes themselves: two exposures may cover the
  // same memory.
  auto start = e.base + pin.offset;
  if (overlaps(e.device, start, pin.length))
    return make_error(errc::resource_exhausted,
                      "Pin: the bytes overlap another session's (device memory is lent "
                      "to one session at a time)");
  loans_[session] = loan_rec{pin.registration, e.device, start, pin.length};
  return device_loan{pin.registration, e.device, e.base + pin.offset, pin.length};
}

caf::expected<uint64_t> device_exposures::lend_local(int device, device_ptr start,
                                                     uint64_t length) {
  std::lock_guard<std::mutex> g{mu_};
  if (overlaps(device, start, length))
    return make_error(errc::resource_exhausted,
                      "the local device range overlaps another remote staging session's "
                      "(device memory is lent to one session at a time)");
  auto id = local_loan_bit | next_local_++;
  loans_[id] = loan_rec{0, device, start, length};
  return id;
}

bool device_exposures::overlaps(int device, device_ptr start, uint64_t length) const {
  for (auto& [other, l] : loans_)
    if (l.device == device && start < l.start + l.length && l.start < start + length)
      return true;
  return false;
}

void device_exposures::give_back(uint64_t session) {
  std::lock_guard<std::mutex> g{mu_};
  loans_.erase(session);
}

size_t device_exposures::exposed() const {
  std::lock_guard<std::mutex> g{mu_};
  return exposures_.size();
}

size_t device_exposures::loans() const {
  std::lock_guard<std::mutex> g{mu_};
  return loans_.size();
}

} // namespace ferry::staging
