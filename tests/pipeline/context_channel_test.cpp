// ContextChannel: records come out of take_frame in the order they were added, and a process's StackNodes
// notes that continue one another are joined into one record (context_channel.h).
#include "memtrack/pipeline/context_channel.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <variant>
#include <vector>

#include "memtrack/codec/context.h"

namespace memtrack::pipeline {
namespace {

codec::StackNodes nodes(std::int32_t pid, std::uint64_t event, std::uint32_t first_id, std::uint32_t count) {
  codec::StackNodes r;
  r.pid = pid;
  r.event = event;
  r.first_id = first_id;
  for (std::uint32_t i = 0; i < count; ++i) {
    r.parents.push_back(first_id + i - 1);
    r.addresses.push_back(0x1000 * pid + first_id + i);
  }
  return r;
}

std::vector<codec::ContextRecord> take(ContextChannel& channel) {
  std::vector<std::byte> frame;
  EXPECT_TRUE(channel.take_frame(frame).is_ok());
  std::vector<codec::ContextRecord> records;
  EXPECT_TRUE(codec::decode_context_frame(frame, 0, records).is_ok());
  return records;
}

// The nodes of every StackNodes record of `pid`, in id order, checked to be consecutive from `first`.
std::vector<std::uint64_t> addresses_of(const std::vector<codec::ContextRecord>& records, std::int32_t pid,
                                        std::uint32_t first) {
  std::vector<std::uint64_t> out;
  for (const auto& record : records)
    if (const auto* n = std::get_if<codec::StackNodes>(&record); n != nullptr && n->pid == pid) {
      EXPECT_EQ(n->first_id, first + out.size());
      EXPECT_EQ(n->parents.size(), n->addresses.size());
      out.insert(out.end(), n->addresses.begin(), n->addresses.end());
    }
  return out;
}

TEST(ContextChannel, AProcesssConsecutiveNodeNotesBecomeOneRecordAcrossOtherProcessesNodes) {
  ContextChannel channel;
  channel.add(nodes(1, 10, 1, 3));
  channel.add(nodes(2, 11, 1, 2));
  channel.add(nodes(1, 12, 4, 2));
  channel.add(nodes(2, 13, 3, 1));
  channel.add(nodes(1, 14, 6, 1));
  const auto records = take(channel);
  ASSERT_EQ(records.size(), 2u);
  const auto& first = std::get<codec::StackNodes>(records[0]);
  EXPECT_EQ(first.pid, 1);
  EXPECT_EQ(first.event, 10u);  // the position of its first nodes: the later ones are defined earlier
  EXPECT_EQ(first.parents, (std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(addresses_of(records, 1, 1), (std::vector<std::uint64_t>{0x1001, 0x1002, 0x1003, 0x1004, 0x1005, 0x1006}));
  EXPECT_EQ(addresses_of(records, 2, 1), (std::vector<std::uint64_t>{0x2001, 0x2002, 0x2003}));
  EXPECT_EQ(std::get<codec::StackNodes>(records[1]).event, 11u);
}

TEST(ContextChannel, NodesAreNotJoinedAcrossAnotherKindOfRecord) {
  // A fork between two notes of the parent: the child's tree is the parent's as of the fork, so the parent's
  // later nodes must stay after the child's ProcessStart.
  ContextChannel channel;
  channel.add(nodes(1, 10, 1, 3));
  channel.add(codec::ProcessStart{2, 1, 11, 20});
  channel.add(nodes(1, 12, 4, 2));
  const auto records = take(channel);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_TRUE(std::holds_alternative<codec::ProcessStart>(records[1]));
  EXPECT_EQ(std::get<codec::StackNodes>(records[2]).first_id, 4u);
  EXPECT_EQ(addresses_of(records, 1, 1).size(), 5u);
}

TEST(ContextChannel, NodesAreJoinedOnlyWhenTheyContinueTheRecordAndWithinItsBound) {
  ContextChannel channel;
  channel.add(nodes(1, 10, 1, 3));
  channel.add(nodes(1, 11, 9, 2));  // not the next id (another image's numbering, a lost block): a record of its own
  channel.add(nodes(1, 12, 11, 4088));
  channel.add(nodes(1, 13, 4099, 6));  // 2 + 4,088 + 6: 4,096 nodes in the record
  channel.add(nodes(1, 14, 4105, 1));  // one more would pass the bound
  const auto records = take(channel);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(std::get<codec::StackNodes>(records[0]).parents.size(), 3u);
  EXPECT_EQ(std::get<codec::StackNodes>(records[1]).parents.size(), 4096u);
  EXPECT_EQ(std::get<codec::StackNodes>(records[2]).first_id, 4105u);
}

TEST(ContextChannel, ATakenRecordIsNeverJoinedAgain) {
  ContextChannel channel;
  channel.add(nodes(1, 10, 1, 3));
  ASSERT_EQ(take(channel).size(), 1u);
  channel.add(nodes(1, 12, 4, 2));
  const auto records = take(channel);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(std::get<codec::StackNodes>(records[0]).first_id, 4u);
  EXPECT_EQ(std::get<codec::StackNodes>(records[0]).event, 12u);
}

// A record looks back at most 16 pending records for its process's last one (context_channel.cpp): with 15
// other processes' records between, the two notes are one record; with 16, they stay two.
TEST(ContextChannel, NodesAreJoinedOnlyWithinTheLookBack) {
  for (const std::uint32_t between : {15u, 16u}) {
    ContextChannel channel;
    channel.add(nodes(1, 10, 1, 2));
    for (std::uint32_t k = 0; k < between; ++k) channel.add(nodes(static_cast<std::int32_t>(100 + k), 11 + k, 1, 1));
    channel.add(nodes(1, 40, 3, 2));
    const auto records = take(channel);
    EXPECT_EQ(records.size(), between + (between < 16 ? 1u : 2u)) << between << " records between";
    EXPECT_EQ(addresses_of(records, 1, 1).size(), 4u);
  }
}

}  // namespace
}  // namespace memtrack::pipeline
