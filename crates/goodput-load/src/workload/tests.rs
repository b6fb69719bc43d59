use super::*;
use crate::protocol::PromptBody;
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::path::Path;
use std::time::Duration;

#[test]
fn sessions_are_drawn_from_the_seed_and_conversations_carry_their_history() {
    let w = Workload::Synthetic {
        input: LengthDist::Fixed(8),
        output: LengthDist::Fixed(3),
        seed: 5,
        tokenizer: None,
        shared_prefix: Some(SharedPrefix { tokens: 16, ratio: 1.0, count: 1 }),
    };
    // A question is a pure function of (seed, session, turn); only the opening one has the prefix.
    assert_eq!(w.question(4, 1).unwrap(), w.question(4, 1).unwrap());
    assert_ne!(w.question(4, 1).unwrap(), w.question(5, 1).unwrap());
    assert_eq!(w.question(4, 0).unwrap().intended_input_tokens, Some(24));
    assert_eq!(w.question(4, 1).unwrap().intended_input_tokens, Some(8));
    assert_eq!(w.question_lengths(4, 0).unwrap().prefix, Some((0, 16)));
    let mut c = Conversation::default();
    let first = c.ask(w.question(4, 0).unwrap());
    c.answered("an answer".into(), 3);
    let second = c.ask(w.question(4, 1).unwrap());
    let PromptBody::Turns(parts) = &second.prompt else { panic!("not a conversation") };
    assert_eq!(parts.len(), 3);
    assert_eq!(PromptBody::Turns(vec![parts[0].clone()]), first.prompt);
    assert_eq!(parts[1], "an answer");
    assert_eq!(second.intended_input_tokens, Some(24 + 3 + 8));
    assert_eq!(second.max_tokens, Some(3));
    // A dataset of chat messages brings no questions.
    let msgs = PromptBody::Messages(vec![serde_json::json!({"role": "user", "content": "x"})]);
    let d = Workload::dataset(
        vec![DatasetEntry {
            prompt: msgs,
            max_tokens: None,
            follow_ups: vec![],
            follow_up_tokens: vec![],
            reference: vec![],
            prompt_tokens: 1,
            images: Vec::new(),
            system: None,
        }],
        None,
        0,
    );
    assert!(d.question(0, 0).unwrap_err().to_string().contains("ShareGPT"));
    let all = Sessions { turns: Turns::All, think: ThinkTime::Fixed(Duration::ZERO) };
    assert!(all.shape(0, 0, None).unwrap_err().to_string().contains("--turns all"));
    assert_eq!("all".parse::<Turns>().unwrap(), Turns::All);
    assert!("x".parse::<Turns>().unwrap_err().to_string().contains("invalid turn count"));
    // Refused in words of turns, not of a length's tokens.
    let e = "4294967296".parse::<Turns>().unwrap_err().to_string();
    assert!(e.contains("at most 2097152 turns") && !e.contains("tokens"), "{e}");
    let e = "0".parse::<Turns>().unwrap_err().to_string();
    assert!(e.contains("a session has at least 1 turn"), "{e}");

    // Turn counts and think times per session.
    let s = Sessions {
        turns: Turns::Drawn(LengthDist::Uniform { lo: 2, hi: 6 }),
        think: "exponential:2s".parse().unwrap(),
    };
    let shapes: Vec<(u32, Vec<Duration>)> = (0..2000).map(|i| s.shape(1, i, None).unwrap()).collect();
    assert_eq!(shapes[7], s.shape(1, 7, None).unwrap());
    assert_eq!(s.shape(1, 7, Some(1)).unwrap(), (1, vec![]), "a conversation's questions cap the turns");
    assert!(shapes.iter().all(|(n, t)| (2..=6).contains(n) && t.len() == *n as usize - 1));
    let thinks: Vec<f64> = shapes.iter().flat_map(|(_, t)| t.iter().map(Duration::as_secs_f64)).collect();
    let mean = thinks.iter().sum::<f64>() / thinks.len() as f64;
    assert!((mean - 2.0).abs() < 0.1, "exponential think time of mean 2 s, drew {mean}");
}

#[test]
fn think_times_parse_and_print() {
    for (text, want) in [
        ("2s", ThinkTime::Fixed(Duration::from_secs(2))),
        ("uniform:500ms..3s", ThinkTime::Uniform { lo: Duration::from_millis(500), hi: Duration::from_secs(3) }),
        ("exponential:2s", ThinkTime::Exponential { mean: Duration::from_secs(2) }),
    ] {
        let t: ThinkTime = text.parse().unwrap();
        assert_eq!(t, want);
        assert_eq!(t.to_string().parse::<ThinkTime>().unwrap(), want, "{text} round-trips");
    }
    for bad in ["2", "uniform:3s..1s", "gamma:2s", "uniform:1s"] {
        let e = bad.parse::<ThinkTime>().unwrap_err().to_string();
        assert!(e.contains("expected 2s, uniform:1s..5s or exponential:2s"), "{e}");
    }
}

#[test]
fn parses_length_specs() {
    assert_eq!("128".parse(), Ok(LengthDist::Fixed(128)));
    assert_eq!("uniform:64..256".parse(), Ok(LengthDist::Uniform { lo: 64, hi: 256 }));
    assert_eq!("normal:512,128".parse(), Ok(LengthDist::Normal { mean: 512.0, std: 128.0 }));
    assert_eq!("lognormal:300,0.5".parse(), Ok(LengthDist::LogNormal { mean: 300.0, sigma: 0.5 }));
    // Zero, in every form, and an endless spread, are refused.
    for bad in ["fixed:0", "uniform:0..0", "uniform:0..4", "normal:512,inf", "lognormal:512,inf", "normal:512,NaN"] {
        let e = bad.parse::<LengthDist>().unwrap_err().to_string();
        assert!(e.contains("at least 1") || e.contains("finite"), "{bad}: {e}");
    }
    for bad in ["0", "abc", "uniform:9..3", "normal:5", "zipf:1,2", "lognormal:-1,1", "uniform:1-3"] {
        let e = bad.parse::<LengthDist>().unwrap_err().to_string();
        assert!(e.contains("expected 128"), "{bad}: {e}");
    }
    for s in ["128", "uniform:64..256", "normal:512,128", "lognormal:300,0.5"] {
        assert_eq!(s.parse::<LengthDist>().unwrap().to_string(), s);
    }
}

#[test]
fn lengths_past_any_prompt_are_refused_and_draws_stay_within_them() {
    for bad in ["4000000000", "2097153", "uniform:8..4000000000", "normal:3000000,1", "lognormal:1e12,1"] {
        let e = bad.parse::<LengthDist>().unwrap_err().to_string();
        assert!(e.contains("at most 2097152 tokens"), "{bad}: {e}");
    }
    assert_eq!(format!("{MAX_TOKENS}").parse(), Ok(LengthDist::Fixed(MAX_TOKENS)));
    // An unbounded distribution's tail stops at the bound.
    let wide: LengthDist = "lognormal:2000000,3".parse().unwrap();
    let mut rng = StdRng::seed_from_u64(3);
    assert!((0..1000).all(|_| wide.sample(&mut rng) <= MAX_TOKENS));
    assert_eq!((wide.most(), LengthDist::Uniform { lo: 2, hi: 9 }.most()), (2_000_000, 9));
    let prefix = SharedPrefix { tokens: 1_000_000_000, ratio: 1.0, count: 1 };
    assert!(prefix.validate().unwrap_err().to_string().contains("at most 2097152 tokens"));
}

#[test]
fn presets_have_the_shapes_their_names_promise() {
    let mut rng = StdRng::seed_from_u64(7);
    let mean = |d: &LengthDist, rng: &mut StdRng| (0..20_000).map(|_| d.sample(rng) as f64).sum::<f64>() / 20_000.0;
    for p in Preset::ALL {
        let (input, output) = p.lengths();
        let (i, o) = (mean(&input, &mut rng), mean(&output, &mut rng));
        assert!((i / input.mean() - 1.0).abs() < 0.03 && (o / output.mean() - 1.0).abs() < 0.03, "{p:?}");
        match p {
            // Short prompt, long answer.
            Preset::Chat => assert!(o > 1.5 * i),
            // Long in, short out; summarisation is 2k+ tokens in every draw.
            Preset::Summarization | Preset::LongDocument => {
                assert!(i > 8.0 * o);
                assert!((0..1000).all(|_| input.sample(&mut rng) >= 2048));
            }
            Preset::Code => assert!(i > 2.0 * o),
        }
    }
    let names: Vec<&str> = Preset::ALL.iter().map(|p| p.name()).collect();
    assert_eq!(names, ["chat", "summarization", "code", "long-document"]);
}

#[test]
fn samples_respect_bounds_and_means() {
    let mut rng = StdRng::seed_from_u64(1);
    let u: LengthDist = "uniform:10..20".parse().unwrap();
    assert!((0..1000).map(|_| u.sample(&mut rng)).all(|x| (10..=20).contains(&x)));
    let n: LengthDist = "normal:5,50".parse().unwrap();
    assert!((0..1000).all(|_| n.sample(&mut rng) >= 1), "clamped at 1");
    let l: LengthDist = "lognormal:400,0.6".parse().unwrap();
    let mean = (0..20000).map(|_| l.sample(&mut rng) as f64).sum::<f64>() / 20000.0;
    assert!((mean - 400.0).abs() < 12.0, "lognormal mean {mean}");
}

#[test]
fn synthetic_items_are_deterministic_and_of_the_asked_length() {
    let w = Workload::Synthetic {
        input: LengthDist::Fixed(50),
        output: LengthDist::Fixed(7),
        seed: 3,
        tokenizer: None,
        shared_prefix: None,
    };
    let (a, b) = (w.item(5), w.item(5));
    assert_eq!(a, b);
    assert_ne!(w.item(5), w.item(6));
    let PromptBody::Text(t) = &a.prompt else { panic!() };
    assert_eq!(t.split_whitespace().count(), 50);
    assert_eq!((a.intended_input_tokens, a.max_tokens), (Some(50), Some(7)));
}

#[test]
fn shared_prefixes_are_common_text_and_lengths_match_items() {
    let w = Workload::Synthetic {
        input: "uniform:10..20".parse().unwrap(),
        output: LengthDist::Fixed(7),
        seed: 3,
        tokenizer: None,
        shared_prefix: Some(SharedPrefix { tokens: 30, ratio: 0.5, count: 2 }),
    };
    let mut by_prefix: std::collections::HashMap<u64, Vec<String>> = Default::default();
    let mut without = 0;
    for i in 0..200 {
        let (l, item) = (w.lengths(i).unwrap(), w.item(i));
        let PromptBody::Text(t) = &item.prompt else { panic!() };
        let words: Vec<&str> = t.split_whitespace().collect();
        assert_eq!(words.len() as u32, l.input, "lengths() agrees with item()");
        assert_eq!(item.intended_input_tokens, Some(l.input as u64));
        match l.prefix {
            Some((id, n)) => by_prefix.entry(id).or_default().push(words[..n as usize].join(" ")),
            None => without += 1,
        }
    }
    assert!((60..140).contains(&without), "about half carry a prefix: {without}");
    assert_eq!(by_prefix.len(), 2);
    for texts in by_prefix.values() {
        assert!(texts.iter().all(|t| t == &texts[0]), "one prefix, one text");
    }
    assert_ne!(by_prefix[&0][0], by_prefix[&1][0]);
}

#[test]
fn a_byte_order_mark_before_a_dataset_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in [
        ("d.jsonl", "\u{feff}{\"prompt\":\"hello\"}\n"),
        (
            "s.json",
            "\u{feff}[{\"conversations\":[{\"from\":\"human\",\"value\":\"hello\"},{\"from\":\"gpt\",\"value\":\"hi\"}]}]",
        ),
    ] {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        let e = load_dataset(&p, None).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(e[0].prompt, PromptBody::Text("hello".into()), "{name}");
    }
}

#[test]
fn jsonl_and_sharegpt_datasets() {
    let dir = tempfile::tempdir().unwrap();
    let jl = dir.path().join("d.jsonl");
    std::fs::write(
        &jl,
        "{\"prompt\":\"hello\",\"max_tokens\":5}\n\n{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}\n",
    )
    .unwrap();
    let e = load_dataset(&jl, None).unwrap();
    assert_eq!(e.len(), 2);
    assert_eq!(
        e[0],
        DatasetEntry {
            prompt: PromptBody::Text("hello".into()),
            max_tokens: Some(5),
            follow_ups: vec![],
            follow_up_tokens: vec![],
            reference: vec![],
            prompt_tokens: 1,
            images: Vec::new(),
            system: None,
        }
    );
    assert!(matches!(e[1].prompt, PromptBody::Messages(_)));

    let sg = dir.path().join("s.json");
    std::fs::write(&sg, r#"[{"id":"a","conversations":[{"from":"human","value":"What is up?"},{"from":"gpt","value":"Not much, friend."}]},{"id":"b","conversations":[{"from":"human","value":"x"}]}]"#).unwrap();
    let e = load_dataset(&sg, None).unwrap();
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].max_tokens, Some(5));
    assert!(e[0].follow_ups.is_empty());
    // A conversation's later questions, each with its answer's length, while the turns alternate.
    std::fs::write(
        &sg,
        r#"[{"conversations":[{"from":"human","value":"Hi"},{"from":"gpt","value":"Hello there"},
            {"from":"human","value":"And then?"},{"from":"gpt","value":"Then this, at length."},
            {"from":"human","value":"Last"}]}]"#,
    )
    .unwrap();
    let e = load_dataset(&sg, None).unwrap();
    // A last question without its answer is still asked, its length the server's (as in JSONL).
    assert_eq!(e[0].follow_ups, [("And then?".to_string(), Some(6)), ("Last".to_string(), None)]);
    let w = Workload::dataset(e, None, 0);
    assert_eq!(w.conversation_turns(0), Some(3));
    let q = w.question(0, 1).unwrap();
    assert_eq!((q.prompt, q.max_tokens), (PromptBody::Text("And then?".into()), Some(6)));
    assert_eq!(w.question(0, 0).unwrap().max_tokens, Some(3));

    let bad = dir.path().join("b.jsonl");
    std::fs::write(&bad, "{\"prompt\":\"ok\"}\n{\"body\":\"no\"}\n").unwrap();
    let err = load_dataset(&bad, None).unwrap_err().to_string();
    assert!(err.contains("line 2") && err.contains("\"prompt\"") && err.contains("its columns are \"body\""), "{err}");
    let missing = load_dataset(Path::new("/nonexistent/x.jsonl"), None).unwrap_err().to_string();
    assert!(missing.contains("cannot read the dataset /nonexistent/x.jsonl"), "{missing}");
}

#[test]
fn dataset_workload_cycles_in_a_seeded_order() {
    let entries: Vec<_> = (0..3)
        .map(|i| DatasetEntry {
            prompt: PromptBody::Text(format!("p{i}")),
            max_tokens: Some(i + 1),
            follow_ups: vec![],
            follow_up_tokens: vec![],
            reference: vec![],
            prompt_tokens: 1,
            images: Vec::new(),
            system: None,
        })
        .collect();
    let w = Workload::dataset(entries, None, 9);
    let first: Vec<_> = (0..3).map(|i| w.item(i)).collect();
    let again: Vec<_> = (3..6).map(|i| w.item(i)).collect();
    assert_eq!(first, again);
    let mut seen: Vec<_> = first.iter().map(|x| x.max_tokens.unwrap()).collect();
    seen.sort();
    assert_eq!(seen, vec![1, 2, 3]);
    // Which prompt each request sends: the same entry a pass later, as
    // its item; a --repeat copy its slot's; a drawn prompt its own.
    let ids: Vec<_> = (0..6).map(|i| w.prompt_id(i).unwrap()).collect();
    assert_eq!(ids[..3], ids[3..]);
    for i in 0..6 {
        let again = (0..6).filter(|&j| w.prompt_id(j) == w.prompt_id(i)).all(|j| w.item(j) == w.item(i));
        assert!(again && ids[..3].iter().filter(|&&k| k == ids[i as usize]).count() == 1);
    }
    let synthetic = Workload::Synthetic {
        input: LengthDist::Fixed(8),
        output: LengthDist::Fixed(3),
        seed: 5,
        tokenizer: None,
        shared_prefix: None,
    };
    assert_eq!(synthetic.prompt_id(4), None);
    let copies = Workload::Repeated { inner: Box::new(synthetic), copies: 2, spread: 3 };
    let slots: Vec<_> = (0..6).map(|i| copies.prompt_id(i).unwrap()).collect();
    assert_eq!(slots, [0, 1, 2, 0, 1, 2]);
    assert_eq!(copies.item(1).prompt, copies.item(4).prompt);
}

#[test]
fn dataset_references_as_a_string_a_list_or_an_answer() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("qa.jsonl");
    std::fs::write(
        &p,
        concat!(
            "{\"prompt\": \"2+2?\", \"reference\": \"4\"}\n",
            "{\"messages\": [{\"role\": \"user\", \"content\": \"capital?\"}], \"reference\": [\"Paris\", \"paris\"]}\n",
            "{\"prompt\": \"hi\", \"answer\": \"hello\"}\n",
            "{\"prompt\": \"none\"}\n",
        ),
    )
    .unwrap();
    let e = load_dataset(&p, None).unwrap();
    let refs: Vec<Vec<String>> = e.iter().map(|e| e.reference.clone()).collect();
    assert_eq!(refs, [vec!["4".to_string()], vec!["Paris".into(), "paris".into()], vec!["hello".into()], vec![]]);
    // Requests carry their entry's reference; repeated, the copies carry their number.
    let w = Workload::dataset(e, None, 1);
    let item = w.item(0);
    let repeated = Workload::Repeated { inner: Box::new(w.clone()), copies: 3, spread: 4 };
    for (i, k) in [(0u64, 0u32), (4, 1), (8, 2)] {
        let r = repeated.item(i);
        assert_eq!(
            (r.prompt.clone(), r.reference.clone(), r.repeat),
            (item.prompt.clone(), item.reference.clone(), Some(k))
        );
    }
    for (bad, want) in [
        ("{\"prompt\": \"x\", \"reference\": 4}", "must be a string or a list"),
        ("{\"prompt\": \"x\", \"answer\": [\"a\", 1]}", "\"answer\" must be a string"),
        ("{\"prompt\": \"x\", \"reference\": []}", "empty list"),
        // A blank reference had been taken, and every answer scored 0 against it.
        ("{\"prompt\": \"x\", \"reference\": \"\"}", "\"reference\" is an empty or blank string:"),
        ("{\"prompt\": \"x\", \"answer\": \" \\n\\t\"}", "\"answer\" is an empty or blank string:"),
        ("{\"prompt\": \"x\", \"reference\": [\"a\", \"\"]}", "empty or blank string in its list"),
    ] {
        std::fs::write(&p, bad).unwrap();
        let err = load_dataset(&p, None).unwrap_err().to_string();
        assert!(err.contains(want) && err.contains("line 1"), "{bad}: {err}");
    }
}

#[test]
fn a_lognormal_s_median_is_below_its_mean_and_its_tail_share_is_measured() {
    let code = LengthDist::LogNormal { mean: 1024.0, sigma: 0.6 };
    // exp(μ) = mean · exp(−σ²/2).
    assert_eq!(code.median(), (1024.0 * (-0.18f64).exp()).round() as u32);
    assert_eq!((LengthDist::Fixed(7).median(), LengthDist::Uniform { lo: 2, hi: 10 }.median()), (7, 6));
    // Llama-2's 4,096 tokens: a fraction of a percent of --preset code's draws pass it.
    let out = LengthDist::LogNormal { mean: 256.0, sigma: 0.6 };
    let share = crate::workload::share_past(&code, 50, &out, 4096);
    assert!((0.001..0.02).contains(&share), "{share}");
    assert_eq!(crate::workload::share_past(&LengthDist::Fixed(100), 0, &LengthDist::Fixed(10), 4096), 0.0);
}

#[test]
fn a_sharegpt_array_reads_each_entry_as_its_jsonl_line_is() {
    let dir = tempfile::tempdir().unwrap();
    let items = [
        // System turns go before the first question; the entry's max_tokens wins; its reference is kept.
        r#"{"conversations":[{"from":"system","value":"Be brief."},{"from":"human","value":"Why?"},{"from":"gpt","value":"Because it is so."}],"max_tokens":7,"reference":"so"}"#,
        // The model speaking first (a greeting): asked from its first question.
        r#"{"conversations":[{"from":"gpt","value":"Hello, how can I help?"},{"from":"human","value":"Hm?"},{"from":"gpt","value":"abcd"}]}"#,
        // The answer sets the length; "answer" is a reference too.
        r#"{"conversations":[{"from":"human","value":"2+2?"},{"from":"gpt","value":"four"}],"answer":["4","four"]}"#,
    ];
    let sg = dir.path().join("s.json");
    std::fs::write(&sg, format!("[{}]", items.join(","))).unwrap();
    let jl = dir.path().join("s.jsonl");
    std::fs::write(&jl, items.join("\n")).unwrap();
    let (from_array, from_lines) = (load_dataset(&sg, None).unwrap(), load_dataset(&jl, None).unwrap());
    assert_eq!(from_array, from_lines);
    assert_eq!(from_array[0].system.as_deref(), Some("Be brief."));
    let got: Vec<_> = from_array.iter().map(|e| (e.prompt.clone(), e.max_tokens, e.reference.clone())).collect();
    assert_eq!(
        got,
        [
            (PromptBody::Text("Why?".into()), Some(7), vec!["so".to_string()]),
            (PromptBody::Text("Hm?".into()), Some(1), vec![]),
            (PromptBody::Text("2+2?".into()), Some(1), vec!["4".into(), "four".into()]),
        ]
    );
    // Nothing but conversations that ask nothing: refused, named.
    std::fs::write(&sg, r#"[{"conversations":[{"from":"gpt","value":"Hello"}]}]"#).unwrap();
    let err = load_dataset(&sg, None).unwrap_err().to_string();
    assert!(err.contains("no entry with \"conversations\" holding a prompt and a reply"), "{err}");
}

#[test]
fn an_empty_prompt_is_skipped_in_jsonl_and_arrays_alike() {
    let dir = tempfile::tempdir().unwrap();
    let jl = dir.path().join("e.jsonl");
    std::fs::write(&jl, "{\"prompt\": \"\"}\n{\"prompt\": \"hi\"}\n{\"text\": \"\"}\n").unwrap();
    let ar = dir.path().join("e.json");
    std::fs::write(&ar, "[{\"prompt\": \"\"}, {\"prompt\": \"hi\"}, {\"text\": \"\"}]").unwrap();
    for p in [&jl, &ar] {
        let e = load_dataset(p, None).unwrap();
        assert_eq!(e.iter().map(|e| e.prompt.clone()).collect::<Vec<_>>(), [PromptBody::Text("hi".into())]);
    }
    std::fs::write(&jl, "{\"prompt\": \"\"}\n").unwrap();
    let err = load_dataset(&jl, None).unwrap_err().to_string();
    assert!(err.contains("holds no usable entry (an empty prompt"), "{err}");
}

#[test]
fn a_dataset_s_max_tokens_is_held_to_max_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.jsonl");
    std::fs::write(&p, format!("{{\"prompt\": \"x\", \"max_tokens\": {}}}\n", crate::workload::MAX_TOKENS)).unwrap();
    assert_eq!(load_dataset(&p, None).unwrap()[0].max_tokens, Some(crate::workload::MAX_TOKENS));
    for bad in ["2097153", "1000000000000", "0", "-1", "1.5"] {
        std::fs::write(&p, format!("{{\"prompt\": \"x\", \"max_tokens\": {bad}}}\n")).unwrap();
        let err = load_dataset(&p, None).unwrap_err().to_string();
        assert!(
            err.contains("line 1")
                && err.contains(&format!("\"max_tokens\" is {bad}: it must be a whole number from 1 to 2097152")),
            "{bad}: {err}"
        );
    }
}

/// `text` written to a FIFO by another thread, the FIFO read as a dataset.
#[cfg(unix)]
fn through_a_fifo(name: &str, text: &'static [u8]) -> Result<Vec<DatasetEntry>, crate::error::WorkloadError> {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join(name);
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    let to = fifo.clone();
    // A writer that gives a few bytes at a time, as a pipe may.
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().write(true).open(to).unwrap();
        for chunk in text.chunks(3) {
            // The reader may stop early (a refusal): a broken pipe is its business.
            if f.write_all(chunk).and_then(|_| f.flush()).is_err() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    });
    let got = load_dataset(&fifo, None);
    writer.join().unwrap();
    got
}

#[cfg(unix)]
#[test]
fn a_dataset_is_read_from_a_fifo_opened_once() {
    let e =
        through_a_fifo("d.jsonl", b"{\"prompt\": \"hello\", \"max_tokens\": 3}\n{\"prompt\": \"again\"}\n").unwrap();
    assert_eq!(e.len(), 2);
    assert_eq!((e[0].prompt.clone(), e[0].max_tokens), (PromptBody::Text("hello".into()), Some(3)));
    let e = through_a_fifo(
        "s.json",
        b"  [{\"conversations\": [{\"from\": \"human\", \"value\": \"q\"}, {\"from\": \"gpt\", \"value\": \"a\"}]}]",
    )
    .unwrap();
    assert_eq!(e[0].prompt, PromptBody::Text("q".into()));
    // Parquet is read from its end: from a pipe it is refused, by name.
    let err = through_a_fifo("p", b"PAR1\x15\x04\x15").unwrap_err().to_string();
    assert!(err.contains("FIFO") || err.contains("reads no Parquet"), "{err}");
}

#[test]
fn skipped_entries_are_counted_by_reason_and_gpt_first_conversations_used() {
    use crate::workload::{read_dataset, Skip};
    let dir = tempfile::tempdir().unwrap();
    // The probe's three conversations: one opening with a gpt greeting, one
    // whose first question got no answer, one answered by bing.
    let sg = dir.path().join("sg2.json");
    std::fs::write(
        &sg,
        r#"[{"conversations":[{"from":"gpt","value":"Hello!"},{"from":"human","value":"QG1"},{"from":"gpt","value":"AG1"},{"from":"human","value":"QG2"},{"from":"gpt","value":"AG2"}]},
{"conversations":[{"from":"human","value":"QH1"},{"from":"human","value":"QH1b"},{"from":"gpt","value":"x"}]},
{"conversations":[{"from":"human","value":"QB1"},{"from":"bing","value":"AB1"},{"from":"human","value":"QB2"},{"from":"gpt","value":"AB2"}]}]"#,
    )
    .unwrap();
    let d = read_dataset(&sg, None, None).unwrap();
    let firsts: Vec<_> = d.entries.iter().map(|e| e.prompt.clone()).collect();
    assert_eq!(firsts, [PromptBody::Text("QG1".into()), PromptBody::Text("QB1".into())]);
    assert_eq!(d.entries[0].follow_ups, [("QG2".to_string(), Some(1))]);
    assert_eq!(d.skipped, [(Skip::NoAnswer, 1, "entry 2".to_string())]);
    let w = d.warnings(&sg).join("\n");
    assert!(
        w.contains("holds 3 entries, 1 skipped: 1 for a ShareGPT conversation whose first question got no answer"),
        "{w}"
    );
    assert!(w.contains("(the first at entry 2)") && w.contains("the run draws from the other 2"), "{w}");
    // JSONL: a gpt-first conversation is asked; blank prompts and
    // conversations that ask nothing are counted, each with its first line.
    let jl = dir.path().join("d.jsonl");
    std::fs::write(
        &jl,
        "{\"conversations\":[{\"from\":\"gpt\",\"value\":\"Hi\"},{\"from\":\"human\",\"value\":\"Q\"}]}\n\
         {\"prompt\":\"   \"}\n{\"prompt\":\"x\"}\n{\"prompt\":\"\"}\n\
         {\"conversations\":[{\"from\":\"gpt\",\"value\":\"Hi\"}]}\n",
    )
    .unwrap();
    let d = read_dataset(&jl, None, None).unwrap();
    let firsts: Vec<_> = d.entries.iter().map(|e| e.prompt.clone()).collect();
    assert_eq!(firsts, [PromptBody::Text("Q".into()), PromptBody::Text("x".into())]);
    assert_eq!(d.skipped, [(Skip::Blank, 2, "line 2".to_string()), (Skip::AsksNothing, 1, "line 5".to_string())]);
    assert_eq!(d.skipped_count(), 3);
}

#[test]
fn unpaired_surrogates_are_read_as_the_replacement_character_and_counted() {
    use crate::workload::read_dataset;
    let dir = tempfile::tempdir().unwrap();
    let ar = dir.path().join("s.json");
    std::fs::write(&ar, "[{\"prompt\":\"a\"},\n{\"prompt\":\"b \\ud83d\\ude00\"},\n{\"prompt\":\"c \\ud83d x\"}]")
        .unwrap();
    let jl = dir.path().join("s.jsonl");
    std::fs::write(&jl, "{\"prompt\":\"a\"}\n{\"prompt\":\"b \\ud83d\\ude00\"}\n{\"prompt\":\"c \\ud83d x\"}\n")
        .unwrap();
    for (p, place) in [(&ar, "entry 3"), (&jl, "line 3")] {
        let d = read_dataset(p, None, None).unwrap();
        assert_eq!(d.entries[1].prompt, PromptBody::Text("b 😀".into()));
        assert_eq!(d.entries[2].prompt, PromptBody::Text("c \u{fffd} x".into()));
        assert_eq!(d.mended, Some((1, place.to_string())));
        let w = d.warnings(p).join("\n");
        assert!(
            w.contains("1 entry (the first at") && w.contains("unpaired UTF-16 surrogate") && w.contains("U+FFFD"),
            "{w}"
        );
    }
    // An escaped backslash before "ud83d" is no escape; a lone low half is mended.
    assert_eq!(super::dataset::mend_surrogates(r#"{"p":"\\ud83d"}"#), None);
    assert_eq!(super::dataset::mend_surrogates(r#"{"p":"\udc00\ud800"}"#).unwrap(), r#"{"p":"\ufffd\ufffd"}"#);
    assert_eq!(super::dataset::mend_surrogates(r#"{"p":"\ud800\udc00"}"#), None);
    // Other faults are still named as they were.
    std::fs::write(&jl, "{\"prompt\":\"a\\ud83d\" x}\n").unwrap();
    let err = read_dataset(&jl, None, None).unwrap_err().to_string();
    assert!(err.contains("line 1, column 19: not JSON (unexpected end of hex escape)"), "{err}");
}

#[test]
fn a_dataset_past_the_entry_cap_is_refused_with_the_fix() {
    use super::dataset::Collector;
    let p = Path::new("big.jsonl");
    let mut c = Collector::new(p, "shuf -n 1000000 FILE > sample.jsonl");
    c.cap = 2;
    let e = |t: &str| {
        Ok(DatasetEntry {
            prompt: PromptBody::Text(t.into()),
            max_tokens: None,
            follow_ups: vec![],
            follow_up_tokens: vec![],
            reference: vec![],
            prompt_tokens: 1,
            images: Vec::new(),
            system: None,
        })
    };
    c.take(e("a"), || "line 1".into()).unwrap();
    c.take(e("b"), || "line 2".into()).unwrap();
    let err = c.take(e("c"), || "line 3".into()).unwrap_err().to_string();
    assert!(err.contains("big.jsonl holds more than 2 entries") && err.contains("shuf -n 1000000 big.jsonl"), "{err}");
    assert!(!err.contains("  "), "one line of words: {err}");
    let e = crate::error::WorkloadError::DatasetMemory { path: p.into(), held: 5, sample: "x" }.to_string();
    let t = crate::error::WorkloadError::DatasetTooLarge { path: p.into(), cap: 4 << 30 }.to_string();
    assert!(!e.contains("  ") && !t.contains("  ") && t.contains("larger than 4 GiB"), "{e} / {t}");
    let m =
        crate::error::WorkloadError::TooManyEntries { path: p.into(), cap: crate::workload::MAX_ENTRIES, sample: "x" }
            .to_string();
    assert!(m.contains("more than 10,000,000 entries"), "{m}");
}

#[test]
fn an_array_entry_past_64_mib_is_refused_as_a_jsonl_line_is() {
    let dir = tempfile::tempdir().unwrap();
    let ar = dir.path().join("one.json");
    let big = "w ".repeat((64 << 20) / 2 + 8);
    std::fs::write(&ar, format!("[{{\"prompt\":\"x\"}}, {{\"prompt\":\"{big}\"}}]")).unwrap();
    let err = load_dataset(&ar, None).unwrap_err().to_string();
    assert!(err.contains("entry 2 is longer than 64 MiB"), "{err}");
}

#[test]
fn a_json_dataset_named_parquet_is_read_as_json_and_other_text_named() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("ok.parquet");
    std::fs::write(&p, "{\"prompt\":\"hello\"}\n").unwrap();
    assert_eq!(load_dataset(&p, None).unwrap()[0].prompt, PromptBody::Text("hello".into()));
    std::fs::write(&p, "prompt,max_tokens\nhello,3\n").unwrap();
    let err = load_dataset(&p, None).unwrap_err().to_string();
    assert!(err.contains("named .parquet but does not begin with Parquet's magic bytes"), "{err}");
}

#[test]
fn system_text_is_a_system_message_in_either_shape() {
    use crate::protocol::{build_body, Api, BodyOptions};
    let dir = tempfile::tempdir().unwrap();
    let jl = dir.path().join("sys.jsonl");
    std::fs::write(
        &jl,
        "{\"messages\":[{\"role\":\"system\",\"content\":\"S1\"},{\"role\":\"user\",\"content\":\"U1\"}]}\n\
         {\"messages\":[{\"role\":\"system\",\"content\":\"S2\"},{\"role\":\"user\",\"content\":\"U2\"},{\"role\":\"assistant\",\"content\":\"A\"}]}\n\
         {\"conversations\":[{\"from\":\"system\",\"value\":\"S3\"},{\"from\":\"human\",\"value\":\"U3\"},{\"from\":\"gpt\",\"value\":\"A\"}]}\n",
    )
    .unwrap();
    let e = load_dataset(&jl, None).unwrap();
    let w = Workload::Dataset {
        entries: std::sync::Arc::new(e),
        output: None,
        order: std::sync::Arc::new(vec![0, 1, 2]),
        seed: 0,
    };
    let chat = BodyOptions { api: Api::Chat, model: "m".into(), ..Default::default() };
    let completions = BodyOptions { api: Api::Completions, model: "m".into(), ..Default::default() };
    for (i, (s, u)) in [("S1", "U1"), ("S2", "U2"), ("S3", "U3")].into_iter().enumerate() {
        let prompt = w.item(i as u64).prompt;
        let b: serde_json::Value = serde_json::from_slice(&build_body(&chat, &prompt, None).unwrap()).unwrap();
        assert_eq!(
            b["messages"],
            serde_json::json!([{"role": "system", "content": s}, {"role": "user", "content": u}]),
            "entry {i}"
        );
        let b: serde_json::Value = serde_json::from_slice(&build_body(&completions, &prompt, None).unwrap()).unwrap();
        assert_eq!(b["prompt"], format!("{s}\n\n{u}"), "entry {i}");
    }
}

#[test]
fn a_count_in_an_image_column_is_no_image() {
    // goodput's own records carry "images" as a count: read back as a dataset.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("rec.jsonl");
    std::fs::write(&p, "{\"prompt\":\"a\",\"images\":0}\n{\"prompt\":\"b\",\"image\":true}\n").unwrap();
    let e = load_dataset(&p, None).unwrap();
    assert_eq!(e.len(), 2);
    assert!(e.iter().all(|e| e.images.is_empty()));
}

/// A dataset's questions have no intended length: every turn of its
/// session has an unknown intended input (it had been 0 on the opening
/// turn, and only the answers' tokens after), not a count that is wrong.
#[test]
fn a_dataset_session_has_no_intended_input() {
    let d = Workload::dataset(
        vec![DatasetEntry {
            prompt: PromptBody::Text("first question".into()),
            max_tokens: Some(4),
            follow_ups: vec![("second question".into(), Some(5))],
            follow_up_tokens: vec![2],
            reference: vec![],
            prompt_tokens: 2,
            images: Vec::new(),
            system: None,
        }],
        None,
        0,
    );
    let mut c = Conversation::default();
    let first = c.ask(d.question(0, 0).unwrap());
    assert_eq!(first.intended_input_tokens, None, "the opening turn");
    c.answered("an answer".into(), 4);
    let second = c.ask(d.question(0, 1).unwrap());
    assert_eq!(second.intended_input_tokens, None, "a later turn: the history holds a question of unknown length");
    let PromptBody::Turns(parts) = &second.prompt else { panic!("not a conversation") };
    assert_eq!(parts.len(), 3);
    // What estimate sends for it: each question as counted when read, and
    // the answer it got (or --output-tokens', drawn as the question draws it).
    assert_eq!(d.question_lengths(0, 0), Some(Lengths { input: 2, output: 4, prefix: None }));
    assert_eq!(d.question_lengths(0, 1), Some(Lengths { input: 2, output: 5, prefix: None }));
    assert_eq!(d.question_lengths(0, 2), None, "no third question");
    let drawn = Workload::dataset(
        vec![DatasetEntry { follow_ups: vec![("second question".into(), None)], ..d_entry(&d) }],
        Some(LengthDist::Uniform { lo: 10, hi: 90 }),
        0,
    );
    assert_eq!(drawn.question_lengths(0, 1).map(|l| l.output), drawn.question(0, 1).unwrap().max_tokens);
    let unknown = Workload::dataset(
        vec![DatasetEntry { follow_ups: vec![("second question".into(), None)], ..d_entry(&d) }],
        None,
        0,
    );
    assert_eq!(unknown.question_lengths(0, 1), None, "the file gives that answer no length");
}

/// The one entry of a one-entry dataset.
fn d_entry(d: &Workload) -> DatasetEntry {
    let Workload::Dataset { entries, .. } = d else { panic!("not a dataset") };
    entries[0].clone()
}

/// A line that does not parse is named by its line and column, without
/// serde_json's own "line 1" (the line alone is its text); a trace's too.
#[test]
fn a_line_that_is_not_json_is_named_by_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let jl = dir.path().join("d.jsonl");
    std::fs::write(&jl, "{\"prompt\": \"a\"}\n{\"prompt\": \"cut\n").unwrap();
    let err = read_dataset(&jl, None, None).unwrap_err().to_string();
    assert!(err.contains("line 2, column 15: not JSON (EOF while parsing a string)"), "{err}");
    assert!(!err.contains("line 1"), "{err}");
    let tr = dir.path().join("t.jsonl");
    std::fs::write(&tr, "{\"timestamp\": 0, \"input_tokens\": 5, \"output_tokens\": 5}\n{\"timestamp\": 1, \"input\n")
        .unwrap();
    let err = crate::trace::read_trace(&tr, 1.0, crate::trace::TraceFormat::Auto).unwrap_err().to_string();
    assert!(err.contains("line 2 is not a trace entry (column 23: EOF while parsing"), "{err}");
    assert!(!err.contains("at line 1"), "{err}");
}

/// A Latin-1 dataset is named as an encoding problem, with the byte and
/// the fix; a UTF-16 one too.
#[test]
fn a_dataset_not_in_utf8_is_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let jl = dir.path().join("latin1.jsonl");
    std::fs::write(&jl, b"{\"prompt\": \"ok\"}\n{\"prompt\": \"caf\xe9\"}\n").unwrap();
    let err = read_dataset(&jl, None, None).unwrap_err().to_string();
    assert!(err.contains("line 2, byte 16: 0xE9 is not UTF-8 text"), "{err}");
    assert!(err.contains("iconv -f latin1 -t utf-8"), "{err}");
    let u16 = dir.path().join("utf16.jsonl");
    let mut bytes = vec![0xff, 0xfe];
    bytes.extend("{\"prompt\": \"hi\"}\n".encode_utf16().flat_map(u16::to_le_bytes));
    std::fs::write(&u16, bytes).unwrap();
    let err = read_dataset(&u16, None, None).unwrap_err().to_string();
    assert!(err.contains("is UTF-16 text") && err.contains("iconv -f utf-16 -t utf-8"), "{err}");
}
