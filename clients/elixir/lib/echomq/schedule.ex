defmodule EchoMQ.Schedule do
  @moduledoc """
  Schedules, the host's half (PROTOCOL.md §11.6): `every` definitions, tick
  ids byte for byte, and the FIREs every worker's upkeep sends for a due
  schedule. This host reads `every <ms> <missed>` definitions, paused or
  not; a `cron` one it leaves alone and says so (§11.6: a host that cannot
  read a definition never guesses).
  """

  alias EchoMQ.Keyspace

  defstruct [:every, :missed, :payload, paused: false]

  @type t :: %__MODULE__{every: pos_integer, missed: binary, payload: binary, paused: boolean}

  @missed_window 60_000

  @doc "The tick's job id (§11.6): `JOB_` and the ULID of the tick and SHA-1's first 80 bits."
  @spec tick_id(binary, binary, non_neg_integer) :: binary
  def tick_id(queue, name, tick) do
    <<random::80, _::binary>> = :crypto.hash(:sha, [queue, 0, name, 0, Integer.to_string(tick)])
    "JOB_" <> EchoMQ.Id.encode(Bitwise.bor(Bitwise.bsl(tick, 80), random))
  end

  @doc "An `every` definition, or nil for any other (a `cron` one, or one that does not read)."
  @spec read(binary) :: t | nil
  def read(definition) do
    [header | rest] = :binary.split(definition, "\n")

    {paused, header} =
      if String.starts_with?(header, "paused "),
        do: {true, binary_part(header, 7, byte_size(header) - 7)},
        else: {false, header}

    with ["every", ms, missed] <- String.split(header, " "),
         true <- Regex.match?(~r/\A\d{1,12}\z/, ms) and String.to_integer(ms) >= 1,
         true <- missed in ["last", "none"] or Regex.match?(~r/\Aall:([1-9]\d{0,2}|1000)\z/, missed) do
      %__MODULE__{every: String.to_integer(ms), missed: missed, payload: Enum.join(rest), paused: paused}
    else
      _ -> nil
    end
  end

  @doc "The definition's text, as SCHEDULE stores it."
  @spec definition(t) :: binary
  def definition(%__MODULE__{} = s), do: "#{if s.paused, do: "paused "}every #{s.every} #{s.missed}\n" <> s.payload

  @doc "The first tick strictly after `now`."
  @spec first_after(t, integer) :: integer
  def first_after(%__MODULE__{every: every}, now), do: (div(now, every) + 1) * every

  @doc """
  The FIREs for one due schedule whose stored next tick is `due`, at the
  server's `now`: sent one at a time, stopping at the first `-1`. A paused
  schedule's, or one with nothing to fire, is one FIRE with `SKIP 1`.
  """
  @spec fires(binary, binary, t, integer, integer) :: [{:fire, [binary], [binary]}]
  def fires(queue, name, %__MODULE__{every: every} = s, due, now) do
    latest = max(due, div(now, every) * every)
    after_latest = (div(latest, every) + 1) * every

    ticks =
      cond do
        s.paused ->
          []

        s.missed == "last" ->
          [latest]

        s.missed == "none" ->
          if now - latest <= @missed_window, do: [latest], else: []

        true ->
          for i <- (String.to_integer(binary_part(s.missed, 4, byte_size(s.missed) - 4)) - 1)..0//-1,
              t = latest - i * every,
              t >= due,
              do: t
      end

    case ticks do
      [] ->
        [fire(queue, name, s, tick_id(queue, name, latest), due, after_latest, ["SKIP", "1"])]

      _ ->
        followers = tl(ticks) ++ [after_latest]
        ticked = [due | Enum.drop(followers, -1)]

        for {{t, following}, tick} <- Enum.zip(Enum.zip(ticks, followers), ticked),
            do: fire(queue, name, s, tick_id(queue, name, t), tick, following, [])
    end
  end

  defp fire(queue, name, s, job, tick, following, skip) do
    args = [job, s.payload, name, Integer.to_string(tick), Integer.to_string(following) | skip]
    {:fire, Keyspace.keys(:fire, queue, job: job), args}
  end
end
