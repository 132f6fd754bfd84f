#include "cluster/roster_publisher.h"

namespace trib::cluster {

RosterPublisher::RosterPublisher(Connections connections, std::uint32_t method)
    : connections_(std::move(connections)), method_(method), writer_([this](const std::string& r) { push(r); }) {}

RosterPublisher::~RosterPublisher() { stop(); }

void RosterPublisher::publish(std::string roster) { writer_.post(std::move(roster)); }

void RosterPublisher::flush() { writer_.flush(); }

void RosterPublisher::stop() { writer_.stop(); }

void RosterPublisher::push(const std::string& roster) {
  // Destroyed at the end of this call, outside every lock: a connection that ended meanwhile
  // may be released here for the last time (its destructor joins its threads).
  std::vector<std::shared_ptr<net::Connection>> open = connections_();
  for (const auto& c : open) {
    try {
      c->notify(net::Message{method_, roster, Tensor()});
    } catch (const std::exception&) {
      // Gone: its own close is a change of its own.
    }
  }
}

}  // namespace trib::cluster
