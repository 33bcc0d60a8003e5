defmodule EchoMQ.Id do
  @moduledoc """
  Branded job ids (PROTOCOL.md §1, §11.2): `JOB_` and a ULID whose first 48
  bits are this node's clock in ms and whose last 80 are random. Within one
  node, ids strictly increase: in the same millisecond as the last id (or an
  earlier one, when the clock stepped back) the next is the last one's
  random part plus one, so equal-priority jobs of one producer are claimed
  in the order they were minted.
  """
  use Agent

  @crockford ~c"0123456789ABCDEFGHJKMNPQRSTVWXYZ"
  @random_max Bitwise.bsl(1, 80) - 1

  @doc false
  def start_link(_), do: Agent.start_link(fn -> {-1, 0} end, name: __MODULE__)

  @doc "A new branded id, greater than every one this node minted before."
  @spec mint() :: binary
  def mint do
    {ms, random} = Agent.get_and_update(__MODULE__, &next/1)
    "JOB_" <> encode(Bitwise.bor(Bitwise.bsl(ms, 80), random))
  end

  defp next({last_ms, last_random}) do
    now = System.system_time(:millisecond)

    cond do
      now > last_ms ->
        found = {now, :crypto.strong_rand_bytes(10) |> :binary.decode_unsigned()}
        {found, found}

      last_random < @random_max ->
        found = {last_ms, last_random + 1}
        {found, found}

      true ->
        # The random part overflowed in this millisecond: wait for the clock, never wrap.
        Process.sleep(1)
        next({last_ms, last_random})
    end
  end

  @doc "A 128-bit number as 26 characters of Crockford base32, upper case."
  @spec encode(non_neg_integer) :: binary
  def encode(value) do
    for shift <- 125..0//-5, into: "" do
      <<Enum.at(@crockford, Bitwise.band(Bitwise.bsr(value, shift), 31))>>
    end
  end

  @doc "Whether `id` carries the full brand: `JOB_` and a canonical ULID (first character at most `7`)."
  @spec branded?(term) :: boolean
  def branded?(<<"JOB_", first, _::binary-size(25)>> = id) when first in ?0..?7 do
    id |> binary_part(4, 26) |> String.to_charlist() |> Enum.all?(&(&1 in @crockford))
  end

  def branded?(_), do: false
end
