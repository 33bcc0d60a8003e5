defmodule EchoMQ.ScheduleTest do
  use ExUnit.Case, async: true

  alias EchoMQ.Schedule

  test "a tick id is §11.6's, byte for byte" do
    assert Schedule.tick_id("emails", "digest", 1_764_522_000_000) == "JOB_01KBAV9ZM00CJXR9ZKBFE946CW"
  end

  test "an every definition reads and writes back; others read as none" do
    every = %Schedule{every: 1000, missed: "all:3", payload: "p\nq", paused: true}
    assert Schedule.read(Schedule.definition(every)) == every
    assert Schedule.read("every 5 last\n") == %Schedule{every: 5, missed: "last", payload: ""}

    for other <- [
          "cron UTC last 0 9 * * *\n",
          "every 0 last\n",
          "every 5 all:1001\n",
          "every 5 sometimes\n",
          "paused paused every 5 last\n"
        ] do
      assert Schedule.read(other) == nil
    end
  end

  test "a due schedule fires as its missed word says" do
    every = %Schedule{every: 1000, missed: "last", payload: "p"}
    # Due at 3000, now 5500: last fires 5000 only, from tick 3000 to next 6000.
    assert [{:fire, _, [id, "p", "s", "3000", "6000"]}] = Schedule.fires("q", "s", every, 3000, 5500)
    assert id == Schedule.tick_id("q", "s", 5000)

    all = Schedule.fires("q", "s", %{every | missed: "all:5"}, 3000, 5500)

    assert Enum.map(all, fn {:fire, _, [_, _, _, tick, next]} -> {tick, next} end) ==
             [{"3000", "4000"}, {"4000", "5000"}, {"5000", "6000"}]

    # Missed by more than a minute: none fires nothing, and moves on.
    slow = %Schedule{every: 100_000, missed: "none", payload: "p"}
    assert [{:fire, _, [_, _, _, "100000", "200000", "SKIP", "1"]}] = Schedule.fires("q", "s", slow, 100_000, 170_000)
    assert [{:fire, _, [_, _, _, "100000", "200000"]}] = Schedule.fires("q", "s", slow, 100_000, 150_000)

    assert [{:fire, _, [_, _, _, "3000", "6000", "SKIP", "1"]}] =
             Schedule.fires("q", "s", %{every | paused: true}, 3000, 5500)
  end
end
