// The catalog of links: every GPU's link in it, a link file read back, an
// unknown name refused with the catalog's names.
#include "model/catalog/link_catalog.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "model/catalog/hardware.h"
#include "model/error.h"
#include "model/json_file.h"

namespace papaya::model {
namespace {

// Every GPU of the catalog names the link its GPUs exchange over, and every
// link has its sources.
TEST(LinkCatalog, EveryGpuNamesALinkOfTheCatalog) {
  const auto links = link_catalog();
  EXPECT_GE(links.size(), 10u);
  for (const auto& hardware : hardware_catalog()) {
    const LinkSpec link = load_link(hardware.interconnect);
    EXPECT_GT(link.fit.bytes_per_s, 0) << hardware.name;
  }
  for (const auto& link : links) {
    EXPECT_FALSE(link.sources.at("bandwidth").empty()) << link.name;
    EXPECT_FALSE(link.sources.at("latency").empty()) << link.name;
  }
  EXPECT_EQ(load_link("nvlink2").name, "NVLink-2");
  EXPECT_DOUBLE_EQ(load_link("NVLink-2").fit.bytes_per_s, 150e9);
}

TEST(LinkCatalog, ALinkFileRoundTripsAndAnUnknownNameListsTheCatalog) {
  const auto path = std::filesystem::temp_directory_path() / ("papaya-link-" + std::to_string(::getpid()) + ".json");
  LinkSpec measured{"loopback", "measured here", {}, {300e-6, 1.1e9, std::nullopt}, {{"bandwidth", "m"}, {"latency", "m"}}};
  write_json_file(path.string(), link_to_json(measured));
  const LinkSpec back = load_link(path.string());
  std::filesystem::remove(path);
  EXPECT_EQ(back.name, "loopback");
  EXPECT_NEAR(back.fit.latency_s, 300e-6, 1e-12);
  EXPECT_NEAR(back.fit.bytes_per_s, 1.1e9, 1e-3);
  try {
    load_link("carrier-pigeon");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("NVLink-4"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace papaya::model
