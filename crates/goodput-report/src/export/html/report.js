(function () {
  var body = document.body, problems = [];
  try {
    var doc = JSON.parse(document.getElementById('goodput-data').textContent);
    if (!doc || typeof doc !== 'object') throw new Error('embedded data is not an object');
    body.setAttribute('data-json-ok', '1');
    var figs = document.querySelectorAll('figure.chart');
    for (var i = 0; i < figs.length; i++) {
      var f = figs[i], want = Number(f.getAttribute('data-points')), drawn = 0;
      var groups = f.querySelectorAll('g.series');
      for (var j = 0; j < groups.length; j++) {
        var g = groups[j], n = Number(g.getAttribute('data-n')), got = 0;
        var line = g.querySelector('polyline');
        if (line) got = line.points.numberOfItems;
        got = Math.max(got, g.querySelectorAll('circle, rect').length);
        if (got !== n) problems.push(f.dataset.chart + ' series ' + j + ' drew ' + got + ' of ' + n);
        drawn += got;
      }
      f.setAttribute('data-drawn', String(drawn));
      if (drawn !== want) problems.push(f.dataset.chart + ' drew ' + drawn + ' of ' + want + ' points');
      var svg = f.querySelector('svg');
      if (want > 0) {
        var box = svg ? svg.getBoundingClientRect() : null;
        if (!box || box.width < 100 || box.height < 50) problems.push(f.dataset.chart + ' has no size');
      }
    }
    body.setAttribute('data-charts', String(figs.length));
  } catch (e) {
    problems.push(String(e && e.message || e));
  }
  if (problems.length) body.setAttribute('data-render-error', problems.join('; '));
  else body.setAttribute('data-render-ok', '1');
})();
