defmodule EchoMQ.ArgsTest do
  use ExUnit.Case, async: true

  alias EchoMQ.Args

  @most EchoMQ.Protocol.size("MAX_ERROR_TEXT")

  test "an error text within the limit goes whole, UTF-8 or not" do
    assert Args.error_text("no good") == "no good"
    assert Args.error_text(<<0xFF, 0x80, "x">>) == <<0xFF, 0x80, "x">>
    text = String.duplicate("é", div(@most, 2))
    assert Args.error_text(text) == text
  end

  test "a longer one is cut at the limit, back before a character it would split" do
    a = fn n -> String.duplicate("a", n) end
    # Nothing split: the limit's bytes.
    assert Args.error_text(a.(@most + 10)) == a.(@most)
    # "é" (2 bytes) across the limit: it goes.
    assert Args.error_text(a.(@most - 1) <> "é") == a.(@most - 1)
    # A 4-byte character across it, its first two bytes within: back two.
    assert Args.error_text(a.(@most - 2) <> "😀") == a.(@most - 2)
    # At most three bytes back, whatever follows.
    continuing = :binary.copy(<<0x80>>, @most + 10)
    assert Args.error_text(continuing) == binary_part(continuing, 0, @most - 3)
  end

  test "bytes that are not UTF-8 are cut at the limit too, at once" do
    # A byte that is no UTF-8 early on: the text is still cut at the limit,
    # not back to before it, and in one step (a 102 KB text took seconds).
    text = <<0xFF>> <> String.duplicate("x", 102_400)
    {micros, cut} = :timer.tc(fn -> Args.error_text(text) end)
    assert cut == binary_part(text, 0, @most)
    assert micros < 500_000
  end
end
