#include "stream/metrics_relay.h"

#include <map>

#include <gtest/gtest.h>

namespace trib::stream {
namespace {

// The coordinator's store, as a map.
struct MapStore {
  std::map<std::string, std::string> values;
  MetricsRelay::Publish publish() {
    return [this](const std::string& k, const std::string& v) { values[k] = v; };
  }
  MetricsRelay::Lookup lookup() {
    return [this](const std::string& k) -> std::optional<std::string> {
      auto it = values.find(k);
      return it == values.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
  }
  // Worker `worker`'s relay of `workers` over this store.
  MetricsRelay relay(int worker, int workers) { return MetricsRelay(worker, workers, publish(), lookup()); }
};

// Three workers over one store (a map): the chief gets the others' rows in order, each once.
TEST(MetricsRelayTest, TheChiefReceivesEveryWorkersRowsOnceInOrder) {
  MapStore store;
  auto publish = store.publish();
  auto lookup = store.lookup();
  MetricsRelay chief(0, 3, publish, lookup), one(1, 3, publish, lookup), two(2, 3, publish, lookup);
  EXPECT_TRUE(chief.receive().empty());
  one.send("a1");
  two.send("b1");
  one.send("a2");
  EXPECT_EQ(chief.receive(), (std::vector<std::string>{"a1", "a2", "b1"}));
  EXPECT_TRUE(chief.receive().empty());
  two.send("b2");
  EXPECT_EQ(chief.receive(), (std::vector<std::string>{"b2"}));
  chief.send("ignored");  // the chief writes its own rows
  EXPECT_EQ(store.values.size(), 4u + 2u);  // the rows, and how many of each worker's it took
}

// A relaunched worker's relay goes on after the rows its lost process sent: the chief, which
// has read those, gets the new ones rather than missing them under reused keys.
TEST(MetricsRelayTest, ARelaunchedWorkerSendsAfterItsLostProcessesRows) {
  MapStore store;
  MetricsRelay chief = store.relay(0, 3);
  {
    MetricsRelay lost = store.relay(2, 3);
    lost.send("old1");
    lost.send("old2");
  }
  EXPECT_EQ(chief.receive(), (std::vector<std::string>{"old1", "old2"}));
  MetricsRelay relaunched = store.relay(2, 3);
  relaunched.send("new1");
  EXPECT_EQ(chief.receive(), (std::vector<std::string>{"new1"}));
}

// A chief relaunched in place goes on after the rows its lost process took (and wrote to
// metrics.jsonl): it writes each row once.
TEST(MetricsRelayTest, ARelaunchedChiefGoesOnAfterTheRowsItsLostProcessTook) {
  MapStore store;
  MetricsRelay one = store.relay(1, 2);
  {
    MetricsRelay lost = store.relay(0, 2);
    one.send("a1");
    one.send("a2");
    EXPECT_EQ(lost.receive(), (std::vector<std::string>{"a1", "a2"}));
    one.send("a3");  // sent before the chief was lost, never taken by it
  }
  MetricsRelay relaunched = store.relay(0, 2);
  one.send("a4");
  EXPECT_EQ(relaunched.receive(), (std::vector<std::string>{"a3", "a4"}));
}

}  // namespace
}  // namespace trib::stream
