// Test support: a group of N ranks as threads in this process over the in-process
// transport, each with its own NetContext and transport, like separate processes. Every
// run has a hard deadline: a hang fails the test binary instead of stalling the suite.
// Header-only so that the unit and integration binaries both use it.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "trib/collectives/group.h"
#include "trib/net/inproc_transport.h"

namespace trib::collectives::testing {

inline net::ClusterSecret test_secret() { return net::ClusterSecret::from_hex("00112233445566778899aabbccddeeff"); }

inline std::shared_ptr<net::Transport> inproc_transport(const std::shared_ptr<net::InProcHub>& hub, int rank,
                                                        net::NetOptions options = {}) {
  auto quiet = [](std::string_view) {};
  auto ctx = net::NetContext::create(test_secret(), net::PeerIdentity{"worker", rank, ""}, options, quiet);
  return std::make_shared<net::InProcTransport>(ctx, hub);
}

// Runs `f` and returns its result, or ends the whole test binary if it is not done within
// `deadline` (a hung collective cannot be cancelled from outside).
template <typename F>
auto within(std::chrono::milliseconds deadline, F&& f) {
  auto done = std::async(std::launch::async, std::forward<F>(f));
  if (done.wait_for(deadline) == std::future_status::timeout) {
    std::fprintf(stderr, "FATAL: a collective test did not finish within %lld ms\n",
                 static_cast<long long>(deadline.count()));
    std::fflush(stderr);
    std::_Exit(3);
  }
  return done.get();
}

struct ThreadGroup {
  std::shared_ptr<net::InProcHub> hub = std::make_shared<net::InProcHub>();
  std::vector<std::shared_ptr<net::Transport>> transports;
  std::vector<std::unique_ptr<Group>> groups;

  // Forms a group of `n` ranks (the formation itself runs one thread per rank).
  explicit ThreadGroup(int n, GroupOptions base = {}) {
    std::vector<Endpoint> endpoints;
    std::vector<std::string> addresses;
    for (int r = 0; r < n; ++r) {
      transports.push_back(inproc_transport(hub, r));
      endpoints.push_back(Endpoint::listen(transports.back(), "coll:0"));
      addresses.push_back(endpoints.back().address());
    }
    groups.resize(static_cast<std::size_t>(n));
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        GroupOptions o = base;
        o.rank = r;
        o.size = n;
        o.addresses = addresses;
        groups[static_cast<std::size_t>(r)] = Group::form(std::move(endpoints[static_cast<std::size_t>(r)]), o);
      });
    }
    for (auto& t : threads) t.join();
  }

  int size() const { return static_cast<int>(groups.size()); }
  Group& operator[](int r) { return *groups[static_cast<std::size_t>(r)]; }

  // Runs body(rank, group) on every rank at once; returns what each threw (null if nothing).
  std::vector<std::exception_ptr> run(const std::function<void(int, Group&)>& body,
                                      std::chrono::milliseconds deadline = std::chrono::seconds(30)) {
    return within(deadline, [&] {
      std::vector<std::exception_ptr> errors(groups.size());
      std::vector<std::thread> threads;
      for (int r = 0; r < size(); ++r) {
        threads.emplace_back([&, r] {
          try {
            body(r, *groups[static_cast<std::size_t>(r)]);
          } catch (...) {
            errors[static_cast<std::size_t>(r)] = std::current_exception();
          }
        });
      }
      for (auto& t : threads) t.join();
      return errors;
    });
  }

  // As run(), failing the test with the first rank's error.
  void run_ok(const std::function<void(int, Group&)>& body,
              std::chrono::milliseconds deadline = std::chrono::seconds(30)) {
    auto errors = run(body, deadline);
    for (std::size_t r = 0; r < errors.size(); ++r) {
      if (!errors[r]) continue;
      try {
        std::rethrow_exception(errors[r]);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "rank " << r << ": " << e.what();
      }
    }
  }
};

inline std::string what(const std::exception_ptr& e) {
  if (!e) return "";
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  }
  return "unknown";
}

}  // namespace trib::collectives::testing
