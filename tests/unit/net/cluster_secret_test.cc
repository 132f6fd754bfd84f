#include "trib/net/cluster_secret.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "trib/core/error.h"

namespace trib::net {
namespace {

TEST(ClusterSecret, GeneratedSecretsAreRandomAndRoundTripThroughHex) {
  ClusterSecret a = ClusterSecret::generate();
  ClusterSecret b = ClusterSecret::generate();
  EXPECT_EQ(a.bytes().size(), 32u);
  EXPECT_FALSE(a == b);
  EXPECT_TRUE(ClusterSecret::from_hex(a.to_hex()) == a);
}

namespace fs = std::filesystem;

// A path in a fresh temporary directory, removed with it.
class SecretDir {
 public:
  SecretDir() : dir_(fs::temp_directory_path() / ("trib_net_secret_" + std::to_string(::getpid()))) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~SecretDir() { fs::remove_all(dir_); }
  fs::path path(const std::string& name) const { return dir_ / name; }
  fs::path write(const std::string& name, const std::string& text, fs::perms perms) const {
    fs::path p = path(name);
    std::ofstream(p) << text;
    fs::permissions(p, perms);
    return p;
  }

 private:
  fs::path dir_;
};

constexpr auto kPrivate = fs::perms::owner_read | fs::perms::owner_write;

TEST(ClusterSecret, LoadsFromFileWithSurroundingWhitespace) {
  SecretDir dir;
  ClusterSecret s = ClusterSecret::generate();
  EXPECT_TRUE(ClusterSecret::from_file(dir.write("s.hex", "  " + s.to_hex() + "\n", kPrivate)) == s);
}

TEST(ClusterSecret, FileOthersMayReadIsRefusedWithAClearError) {
  SecretDir dir;
  for (fs::perms extra : {fs::perms::group_read, fs::perms::others_read}) {
    fs::path p = dir.write("open.hex", ClusterSecret::generate().to_hex(), kPrivate | extra);
    try {
      ClusterSecret::from_file(p);
      FAIL() << "a secret file others may read was accepted";
    } catch (const Unauthenticated& e) {
      EXPECT_NE(std::string(e.what()).find(p.string()), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("chmod 600"), std::string::npos) << e.what();
    }
  }
}

TEST(ClusterSecret, FileOwnedByAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a file to another user";
  SecretDir dir;
  fs::path p = dir.write("theirs.hex", ClusterSecret::generate().to_hex(), kPrivate);
  ASSERT_EQ(::chown(p.c_str(), 4242, 4242), 0);
  // Read as root: root's own files are trusted, the files of user 4242 are not.
  try {
    ClusterSecret::from_file(p);
    FAIL() << "a secret file owned by another user was accepted";
  } catch (const Unauthenticated& e) {
    EXPECT_NE(std::string(e.what()).find("owned by uid 4242"), std::string::npos) << e.what();
  }
}

TEST(ClusterSecret, CreatedFileIsPrivateFromTheFirstByteAndNeverOverwritten) {
  SecretDir dir;
  ::mode_t old_umask = ::umask(0);  // even a permissive umask cannot widen it
  ClusterSecret s = ClusterSecret::create_file(dir.path("new.hex"));
  ::umask(old_umask);
  EXPECT_EQ(fs::status(dir.path("new.hex")).permissions(), kPrivate);
  EXPECT_TRUE(ClusterSecret::from_file(dir.path("new.hex")) == s);
  EXPECT_THROW(ClusterSecret::create_file(dir.path("new.hex")), IoError);
  bool created = true;
  EXPECT_TRUE(ClusterSecret::load_or_create(dir.path("new.hex"), created) == s);
  EXPECT_FALSE(created);
  ClusterSecret fresh = ClusterSecret::load_or_create(dir.path("other.hex"), created);
  EXPECT_TRUE(created);
  EXPECT_FALSE(fresh == s);
}

TEST(ClusterSecret, CreationFollowsNoPlantedLink) {
  SecretDir dir;
  fs::create_symlink(dir.path("target"), dir.path("link.hex"));
  EXPECT_THROW(ClusterSecret::create_file(dir.path("link.hex")), IoError);
  EXPECT_FALSE(fs::exists(dir.path("target"))) << "the secret was written through a link";
}

TEST(ClusterSecret, LoadsFromADescriptor) {
  ClusterSecret s = ClusterSecret::generate();
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::string text = s.to_hex() + "\n";
  ASSERT_EQ(::write(fds[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ::close(fds[1]);
  EXPECT_TRUE(ClusterSecret::from_fd(fds[0]) == s);  // closes fds[0]
  EXPECT_THROW(ClusterSecret::from_fd(1000), InvalidArgument);
}

TEST(ClusterSecret, SourcesAreTakenInOrderAndNoneIsAClearError) {
  SecretDir dir;
  ClusterSecret a = ClusterSecret::generate(), b = ClusterSecret::generate();
  fs::path file = dir.write("a.hex", a.to_hex(), kPrivate);
  ::setenv("TRIB_NET_TEST_SOURCE", b.to_hex().c_str(), 1);
  EXPECT_TRUE(load_secret({-1, file.string(), "TRIB_NET_TEST_SOURCE"}) == a);
  EXPECT_TRUE(load_secret({-1, "", "TRIB_NET_TEST_SOURCE"}) == b);
  ::unsetenv("TRIB_NET_TEST_SOURCE");
  try {
    load_secret({-1, "", "TRIB_NET_TEST_SOURCE"});
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("--secret-fd"), std::string::npos) << e.what();
  }
}

TEST(ClusterSecret, LoadsFromTheNamedEnvironmentVariable) {
  ClusterSecret s = ClusterSecret::generate();
  ::setenv("TRIB_NET_TEST_SECRET", s.to_hex().c_str(), 1);
  EXPECT_TRUE(ClusterSecret::from_env("TRIB_NET_TEST_SECRET") == s);
  ::unsetenv("TRIB_NET_TEST_SECRET");
  EXPECT_THROW(ClusterSecret::from_env("TRIB_NET_TEST_SECRET"), NotFound);
}

TEST(ClusterSecret, BadInputGetsAMessageNamingTheSource) {
  try {
    ClusterSecret::from_file("/nonexistent/secret");
    FAIL();
  } catch (const NotFound& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/secret"), std::string::npos);
  }
  EXPECT_THROW(ClusterSecret::from_hex("abc"), InvalidArgument);            // odd length
  EXPECT_THROW(ClusterSecret::from_hex("zz" + std::string(30, '0')), InvalidArgument);
  EXPECT_THROW(ClusterSecret::from_hex("0011"), InvalidArgument);           // too short
}

}  // namespace
}  // namespace trib::net
