defmodule EchoMQ.Reply do
  @moduledoc """
  A transition's reply in Elixir terms, read by the shape PROTOCOL.md §11.4
  gives it: integers as integers, bulk strings as binaries, nil as `nil`,
  and ACKMANY's per-job refusals as `{:error, {:server, text}}`.

  Why by shape: eredis (Debian's `erlang-redis-client`, 1.2) speaks RESP2
  and hands back an integer reply, a bulk string and an error reply nested
  in an array all as binaries. §11.4 says where each transition answers an
  integer, so this module types them there, and nowhere else; a bulk string
  the protocol calls a bulk string (a payload `"1"`) stays a binary.
  """

  @doc "`raw` (as eredis gives it) typed as §11.4 says `transition` answers."
  @spec read(atom, term) :: term
  def read(transition, raw), do: typed(transition, nils(raw))

  defp nils(:undefined), do: nil
  defp nils(list) when is_list(list), do: Enum.map(list, &nils/1)
  defp nils(value), do: value

  defp typed(:enqueue, value), do: if(integer?(value), do: int(value), else: value)
  defp typed(t, list) when t in [:enqueuemany, :stats, :reap, :settle, :permit, :renew], do: Enum.map(list, &int/1)
  defp typed(t, list) when t in [:claim, :acknext], do: Enum.map(list, &claimed/1)
  defp typed(:ackmany, list), do: Enum.map(list, &acked/1)
  defp typed(:config, list), do: Enum.take(list, 11) |> Enum.map(&int/1) |> Kernel.++(Enum.drop(list, 11))

  defp typed(:counts, [now, totals, slots]),
    do: [int(now), Enum.map(totals, &int/1), Enum.map(slots, &Enum.map(&1, fn n -> int(n) end))]

  defp typed(:schedules, [now | found]), do: [int(now) | Enum.map(found, fn [n, d, next] -> [n, d, int(next)] end)]
  defp typed(t, [written | rest]) when t in [:flow, :adopt], do: [int(written) | rest]
  defp typed(:group, row), do: group_row(row)
  defp typed(:groups, [next | rows]), do: [next | Enum.map(rows, &group_row/1)]
  defp typed(t, value) when t in [:fail, :inspect, :children], do: value
  defp typed(_integer_reply, value) when is_binary(value), do: int(value)
  # A shape this package was not written for (a transition added later) stays as eredis read it.
  defp typed(_unknown, value), do: value

  defp claimed([id, token | rest]), do: [id, int(token) | rest]
  defp claimed(word), do: int(word)

  # GROUP's row (1.7): its pending and running counts are integers.
  defp group_row([group, pending, running | rest]), do: [group, int(pending), int(running) | rest]

  defp acked("1"), do: 1
  defp acked(text), do: {:error, {:server, text}}

  defp integer?(value), do: is_binary(value) and Regex.match?(~r/\A-?\d+\z/, value)

  defp int(value) when is_binary(value) do
    if integer?(value), do: String.to_integer(value), else: value
  end

  defp int(value), do: value
end
